/**
 * The IANA IPv4 and IPv6 Special-Purpose Address Registries (RFC 6890 and its updates), one row
 * per block, as the outbound address guard reads them (src/callbacks/addresses.ts,
 * docs/decisions/streams-and-deliveries.md "Special-purpose addresses from the IANA registries"). A block is refused when the registry does
 * not call it globally reachable: documentation, benchmarking, discard-only and the like are not
 * on the Internet, and a machine may carry such an address on an interface of its own.
 *
 *   reachable  the registry's "Globally Reachable" (false also where it says N/A for a
 *              deprecated block, which is refused as before)
 *   never      refused even with CALLBACK_ALLOW_PRIVATE: "this network", limited broadcast,
 *              reserved, unspecified (and multicast, below); every other refused block is internal
 *   carries    the block's addresses reach an IPv4 host named in them: judged as that IPv4
 *              address (addresses.ts embeddedIpv4), so its row is a record, not a rule
 *
 * A globally reachable row inside a refused one (192.0.0.9/32 in 192.0.0.0/24, 2001:3::/32 in
 * 2001::/23) is an exception: the most specific row decides. Checked against the registries as of
 * 2025 (IPv6 with 3fff::/20, 5f00::/16 and 100:0:0:1::/64).
 */
export interface SpecialPurposeBlock {
  block: string;
  name: string;
  reachable: boolean;
  never?: true;
  carries?: true;
}

export const ipv4SpecialPurpose: SpecialPurposeBlock[] = [
  { block: '0.0.0.0/8', name: '"This network" (RFC 791)', reachable: false, never: true },
  { block: '0.0.0.0/32', name: '"This host on this network" (RFC 1122)', reachable: false, never: true },
  { block: '10.0.0.0/8', name: 'Private-Use (RFC 1918)', reachable: false },
  { block: '100.64.0.0/10', name: 'Shared Address Space (RFC 6598)', reachable: false },
  { block: '127.0.0.0/8', name: 'Loopback (RFC 1122)', reachable: false },
  { block: '169.254.0.0/16', name: 'Link Local (RFC 3927), with the 169.254.169.254 metadata service', reachable: false },
  { block: '172.16.0.0/12', name: 'Private-Use (RFC 1918)', reachable: false },
  { block: '192.0.0.0/24', name: 'IETF Protocol Assignments (RFC 6890)', reachable: false },
  { block: '192.0.0.0/29', name: 'IPv4 Service Continuity Prefix (RFC 7335)', reachable: false },
  { block: '192.0.0.8/32', name: 'IPv4 dummy address (RFC 7600)', reachable: false },
  { block: '192.0.0.9/32', name: 'Port Control Protocol Anycast (RFC 7723)', reachable: true },
  { block: '192.0.0.10/32', name: 'Traversal Using Relays around NAT Anycast (RFC 8155)', reachable: true },
  { block: '192.0.0.170/32', name: 'NAT64/DNS64 Discovery (RFC 7050)', reachable: false },
  { block: '192.0.0.171/32', name: 'NAT64/DNS64 Discovery (RFC 7050)', reachable: false },
  { block: '192.0.2.0/24', name: 'Documentation, TEST-NET-1 (RFC 5737)', reachable: false },
  { block: '192.31.196.0/24', name: 'AS112-v4 (RFC 7535)', reachable: true },
  { block: '192.52.193.0/24', name: 'AMT (RFC 7450)', reachable: true },
  { block: '192.88.99.0/24', name: 'Deprecated (6to4 Relay Anycast) (RFC 7526)', reachable: false },
  { block: '192.168.0.0/16', name: 'Private-Use (RFC 1918)', reachable: false },
  { block: '192.175.48.0/24', name: 'Direct Delegation AS112 Service (RFC 7534)', reachable: true },
  { block: '198.18.0.0/15', name: 'Benchmarking (RFC 2544), used inside some clouds', reachable: false },
  { block: '198.51.100.0/24', name: 'Documentation, TEST-NET-2 (RFC 5737)', reachable: false },
  { block: '203.0.113.0/24', name: 'Documentation, TEST-NET-3 (RFC 5737)', reachable: false },
  { block: '240.0.0.0/4', name: 'Reserved (RFC 1112)', reachable: false, never: true },
  { block: '255.255.255.255/32', name: 'Limited Broadcast (RFC 8190)', reachable: false, never: true },
];

export const ipv6SpecialPurpose: SpecialPurposeBlock[] = [
  { block: '::1/128', name: 'Loopback Address (RFC 4291)', reachable: false },
  { block: '::/128', name: 'Unspecified Address (RFC 4291)', reachable: false, never: true },
  { block: '::ffff:0:0/96', name: 'IPv4-mapped Address (RFC 4291)', reachable: false, carries: true },
  { block: '64:ff9b::/96', name: 'IPv4-IPv6 Translation (RFC 6052)', reachable: true, carries: true },
  // Local-use NAT64 leads through a translator of this very network: its /96 form is judged as
  // the IPv4 address it carries, every other address in the /48 is refused.
  { block: '64:ff9b:1::/48', name: 'IPv4-IPv6 Translation, local use (RFC 8215)', reachable: false },
  { block: '100::/64', name: 'Discard-Only Address Block (RFC 6666)', reachable: false },
  { block: '100:0:0:1::/64', name: 'Dummy IPv6 Prefix (RFC 9780)', reachable: false },
  { block: '2001::/23', name: 'IETF Protocol Assignments (RFC 2928)', reachable: false },
  // Teredo tunnels to an IPv4 host whose address is obfuscated in the suffix, and the relay may
  // sit inside the network (the registry: N/A): too easy a way around the IPv4 rows to allow.
  { block: '2001::/32', name: 'TEREDO (RFC 4380)', reachable: false },
  { block: '2001:1::1/128', name: 'Port Control Protocol Anycast (RFC 7723)', reachable: true },
  { block: '2001:1::2/128', name: 'Traversal Using Relays around NAT Anycast (RFC 8155)', reachable: true },
  { block: '2001:1::3/128', name: 'DNS-SD Service Registration Protocol Anycast (RFC 9665)', reachable: true },
  { block: '2001:2::/48', name: 'Benchmarking (RFC 5180)', reachable: false },
  { block: '2001:3::/32', name: 'AMT (RFC 7450)', reachable: true },
  { block: '2001:4:112::/48', name: 'AS112-v6 (RFC 7535)', reachable: true },
  { block: '2001:10::/28', name: 'Deprecated (previously ORCHID) (RFC 4843)', reachable: false },
  { block: '2001:20::/28', name: 'ORCHIDv2 (RFC 7343)', reachable: true },
  { block: '2001:30::/28', name: 'Drone Remote ID Protocol Entity Tags (RFC 9374)', reachable: true },
  { block: '2001:db8::/32', name: 'Documentation (RFC 3849)', reachable: false },
  { block: '2002::/16', name: '6to4 (RFC 3056)', reachable: false, carries: true },
  { block: '2620:4f:8000::/48', name: 'Direct Delegation AS112 Service (RFC 7534)', reachable: true },
  { block: '3fff::/20', name: 'Documentation (RFC 9637)', reachable: false },
  { block: '5f00::/16', name: 'Segment Routing (SRv6) SIDs (RFC 9602)', reachable: false },
  { block: 'fc00::/7', name: 'Unique-Local (RFC 4193), with fd00:ec2::254 (AWS metadata over IPv6)', reachable: false },
  { block: 'fe80::/10', name: 'Link-Local Unicast (RFC 4291)', reachable: false },
];

/** Outside the special-purpose registries, and refused as before. */
export const otherRefusedBlocks: (SpecialPurposeBlock & { family: 'ipv4' | 'ipv6' })[] = [
  { block: '224.0.0.0/4', name: 'Multicast (IPv4 Multicast Address Space registry)', reachable: false, never: true, family: 'ipv4' },
  { block: 'ff00::/8', name: 'Multicast (IPv6 Multicast Address Space registry)', reachable: false, never: true, family: 'ipv6' },
  { block: 'fec0::/10', name: 'Site-local (RFC 3879): deprecated, but still routed inside some networks', reachable: false, family: 'ipv6' },
];
