import { BlockList, isIP } from 'node:net';
import { ipv4SpecialPurpose, ipv6SpecialPurpose, otherRefusedBlocks, type SpecialPurposeBlock } from './special-purpose.ts';

/**
 * Which addresses a callback may connect to (decisions section 7). A seller chooses the callback
 * URL, so without this guard the marketplace would make requests into its own network on the
 * seller's behalf (SSRF): to loopback, private networks, link-local and cloud metadata addresses.
 * The guard judges the address actually connected to, after DNS, on every redirect hop. What it
 * refuses is the data of special-purpose.ts: every block the IANA registries do not call globally
 * reachable (issue 28, point 14), multicast and site-local.
 */
export type AddressPolicy = (address: string) => boolean;

type Family = 'ipv4' | 'ipv6';
const rows: (SpecialPurposeBlock & { family: Family })[] = [
  ...ipv4SpecialPurpose.map((row) => ({ ...row, family: 'ipv4' as const })),
  ...ipv6SpecialPurpose.map((row) => ({ ...row, family: 'ipv6' as const })),
  ...otherRefusedBlocks,
];

function blockListOf(chosen: (SpecialPurposeBlock & { family: Family })[]): BlockList {
  const list = new BlockList();
  for (const { block, family } of chosen) {
    const [network, prefix] = block.split('/') as [string, string];
    list.addSubnet(network, Number(prefix), family);
  }
  return list;
}

// Rows that carry an IPv4 address are judged as that address (embeddedIpv4), not by their row.
const rules = rows.filter((row) => !row.carries);
/** Globally reachable blocks inside refused ones (192.0.0.9/32, 2001:3::/32): the most specific row decides. */
const reachable = blockListOf(rules.filter((row) => row.reachable));
/** Never reachable or never meant: refused even when private addresses are allowed. */
const never = blockListOf(rules.filter((row) => !row.reachable && row.never));
/** Not globally reachable: refused unless CALLBACK_ALLOW_PRIVATE. */
const internal = blockListOf(rules.filter((row) => !row.reachable && !row.never));

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
  if (reachable.check(bare, type)) return true;
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
