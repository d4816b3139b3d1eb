import { BlockList, isIP } from 'node:net';

/**
 * Which addresses a callback may connect to (decisions section 7). A seller chooses the callback
 * URL, so without this guard the marketplace would make requests into its own network on the
 * seller's behalf (SSRF): to loopback, private networks, link-local and cloud metadata addresses.
 * The guard judges the address actually connected to, after DNS, on every redirect hop.
 */
export type AddressPolicy = (address: string) => boolean;

/** Never reachable or never meant: refused even when private addresses are allowed. */
const neverRanges: [string, number, 'ipv4' | 'ipv6'][] = [
  ['0.0.0.0', 8, 'ipv4'], // "this network": 0.0.0.0 reaches the local host on Linux
  ['224.0.0.0', 4, 'ipv4'], // multicast
  ['240.0.0.0', 4, 'ipv4'], // reserved, and 255.255.255.255 broadcast
  ['::', 128, 'ipv6'], // unspecified
  ['ff00::', 8, 'ipv6'], // multicast
];

/** Internal: refused unless CALLBACK_ALLOW_PRIVATE. */
const privateRanges: [string, number, 'ipv4' | 'ipv6'][] = [
  ['10.0.0.0', 8, 'ipv4'],
  ['100.64.0.0', 10, 'ipv4'], // carrier-grade NAT
  ['127.0.0.0', 8, 'ipv4'],
  ['169.254.0.0', 16, 'ipv4'], // link-local, with the 169.254.169.254 metadata service
  ['172.16.0.0', 12, 'ipv4'],
  ['192.0.0.0', 24, 'ipv4'], // IETF protocol assignments
  ['192.168.0.0', 16, 'ipv4'],
  ['198.18.0.0', 15, 'ipv4'], // benchmarking, used inside some clouds
  ['::1', 128, 'ipv6'],
  ['fc00::', 7, 'ipv6'], // unique local, with fd00:ec2::254 (AWS metadata over IPv6)
  ['fe80::', 10, 'ipv6'], // link-local
  ['fec0::', 10, 'ipv6'], // site-local: deprecated, but still routed inside some networks
  // Local-use NAT64 (RFC 8215) leads through a translator of this very network; its /96 form is
  // judged as the IPv4 address it carries (embeddedIpv4), every other address in it is refused.
  ['64:ff9b:1::', 48, 'ipv6'],
  // Teredo tunnels to an IPv4 host whose address is obfuscated in the suffix, and the relay
  // may sit inside the network: too easy a way around the IPv4 ranges to allow.
  ['2001::', 32, 'ipv6'],
];

function blockListOf(ranges: [string, number, 'ipv4' | 'ipv6'][]): BlockList {
  const list = new BlockList();
  for (const [network, prefix, family] of ranges) list.addSubnet(network, prefix, family);
  return list;
}

const never = blockListOf(neverRanges);
const internal = blockListOf(privateRanges);

/** The eight 16-bit groups of an IPv6 address, including one that ends in a dotted IPv4 part. */
function ipv6Groups(address: string): number[] {
  let text = address.split('%')[0]!.toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const bytes = dotted[1]!.split('.').map(Number);
    text = `${text.slice(0, -dotted[1]!.length)}${((bytes[0]! << 8) | bytes[1]!).toString(16)}:${((bytes[2]! << 8) | bytes[3]!).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const headGroups = head ? head.split(':') : [];
  const tailGroups = tail ? tail.split(':') : [];
  const groups = tail === undefined ? headGroups : [...headGroups, ...Array<string>(8 - headGroups.length - tailGroups.length).fill('0'), ...tailGroups];
  return groups.map((group) => parseInt(group, 16));
}

const ipv4Of = (high: number, low: number) => `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;

/**
 * The IPv4 address an IPv6 address carries, when it is one of the forms that reach an IPv4 host:
 * IPv4-mapped (::ffff:a.b.c.d), IPv4-translated (::ffff:0:a.b.c.d), IPv4-compatible (::a.b.c.d),
 * NAT64 (64:ff9b::a.b.c.d), local-use NAT64 in its /96 form (64:ff9b:1::a.b.c.d) and 6to4
 * (2002:aabb:ccdd::). Such an address is judged as the IPv4 address it leads to.
 */
export function embeddedIpv4(address: string): string | null {
  const groups = ipv6Groups(address);
  if (groups.length !== 8 || groups.some((group) => Number.isNaN(group))) return null;
  const zeros = (from: number, to: number) => groups.slice(from, to).every((group) => group === 0);
  if (zeros(0, 5) && groups[5] === 0xffff) return ipv4Of(groups[6]!, groups[7]!);
  if (zeros(0, 4) && groups[4] === 0xffff && groups[5] === 0) return ipv4Of(groups[6]!, groups[7]!);
  if (zeros(0, 6) && (groups[6]! !== 0 || groups[7]! > 1)) return ipv4Of(groups[6]!, groups[7]!);
  if (groups[0] === 0x64 && groups[1] === 0xff9b && zeros(2, 6)) return ipv4Of(groups[6]!, groups[7]!);
  if (groups[0] === 0x64 && groups[1] === 0xff9b && groups[2] === 1 && zeros(3, 6)) return ipv4Of(groups[6]!, groups[7]!);
  if (groups[0] === 0x2002) return ipv4Of(groups[1]!, groups[2]!);
  return null;
}

function judge(address: string, allowPrivate: boolean): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  if (family === 6) {
    const inner = embeddedIpv4(address);
    if (inner !== null) return judge(inner, allowPrivate);
  }
  const type = family === 4 ? 'ipv4' : 'ipv6';
  const bare = address.split('%')[0]!;
  if (never.check(bare, type)) return false;
  return allowPrivate || !internal.check(bare, type);
}

/** Public addresses only: the production default. */
export const publicAddressesOnly: AddressPolicy = (address) => judge(address, false);

/** Anything but the never-ranges: CALLBACK_ALLOW_PRIVATE=true (tests, private deployments). */
export const privateAddressesAllowed: AddressPolicy = (address) => judge(address, true);

/**
 * Public addresses plus the given subnets (CIDR), for a deployment (or a test) that trusts exactly
 * one internal range: every other internal address stays refused.
 */
export function publicAnd(subnets: string[]): AddressPolicy {
  const extra = new BlockList();
  for (const subnet of subnets) {
    const [network, prefix] = subnet.split('/') as [string, string];
    extra.addSubnet(network, Number(prefix), isIP(network) === 6 ? 'ipv6' : 'ipv4');
  }
  return (address) => {
    const inner = isIP(address) === 6 ? embeddedIpv4(address) : null;
    const plain = inner ?? address.split('%')[0]!;
    if (isIP(plain) !== 0 && extra.check(plain, isIP(plain) === 6 ? 'ipv6' : 'ipv4')) return judge(plain, true);
    return judge(address, false);
  };
}
