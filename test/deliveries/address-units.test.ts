import { describe, expect, it } from 'vitest';
import { embeddedIpv4, privateAddressesAllowed, publicAddressesOnly, publicAnd } from '../../src/callbacks/addresses.ts';
import { ipv4SpecialPurpose, ipv6SpecialPurpose, otherRefusedBlocks } from '../../src/callbacks/special-purpose.ts';

/**
 * The address guard of every outbound request (callbacks, webhooks), form by form: each IPv6
 * spelling of an IPv4 host is judged as that host, zone ids are ignored, and an operator's trusted
 * subnet opens exactly that subnet (issue 16, mutation testing of the claims group).
 */
describe('IPv4 hosts inside IPv6 addresses', () => {
  it.each([
    ['::ffff:10.200.30.4', '10.200.30.4'],
    ['::ffff:10.0.200.4', '10.0.200.4'],
    ['::ffff:10.0.0.200', '10.0.0.200'],
    ['::FFFF:7F00:1', '127.0.0.1'],
    ['::ffff:0:127.0.0.1', '127.0.0.1'],
    ['::ffff:0:a00:1', '10.0.0.1'],
    ['::10.0.0.1', '10.0.0.1'],
    ['::0.0.0.2', '0.0.0.2'],
    ['::0.1.0.0', '0.1.0.0'],
    ['64:ff9b::169.254.169.254', '169.254.169.254'],
    ['64:ff9b:1::10.1.2.3', '10.1.2.3'],
    ['2002:c0a8:101::', '192.168.1.1'],
    ['2002:0a00:0001::1', '10.0.0.1'],
  ])('finds %s carries %s', (address, carried) => {
    expect(embeddedIpv4(address)).toBe(carried);
  });

  it.each([
    '::1',
    '::',
    '2001:db8::1',
    '64:ff9b:2::10.1.2.3',
    '64:ff9b:1:1::10.1.2.3',
    '0:0:0:0:1:ffff:a00:1',
    '::ffff:1:a00:1',
    '1::ffff:a00:1',
    '::ffff:zz:1',
    '1:2:3',
    '64:ff9b:0:0:1::a00:1',
  ])('finds nothing in %s', (address) => {
    expect(embeddedIpv4(address)).toBeNull();
  });
});

describe('the policies', () => {
  it('refuses every spelling of an internal IPv4 host publicly, and allows each when private addresses are', () => {
    for (const address of [
      '::ffff:10.200.30.4',
      '::ffff:10.0.0.200',
      '::ffff:0:127.0.0.1',
      '::10.0.0.1',
      '64:ff9b::169.254.169.254',
      '64:ff9b:1::10.1.2.3',
      '2002:c0a8:101::',
    ]) {
      expect(publicAddressesOnly(address)).toBe(false);
      expect(privateAddressesAllowed(address)).toBe(true);
    }
    for (const address of ['::ffff:8.8.8.8', '64:ff9b::8.8.8.8', '2002:808:808::']) expect(publicAddressesOnly(address)).toBe(true);
  });

  it('judges an address next to the NAT64 prefixes as itself, not as the IPv4 host its last groups spell', () => {
    // Only 64:ff9b::/96 and 64:ff9b:1::/96 lead to an IPv4 host; a public address whose other
    // groups look alike (2606:ff9b::, 64:ff9c::) is not refused for the 10.0.0.1 its tail spells.
    for (const address of ['2606:ff9b::a00:1', '2606:ff9b:1::a00:1', '64:ff9c::a00:1', '64:ff9c:1::a00:1']) {
      expect(embeddedIpv4(address)).toBeNull();
      expect(publicAddressesOnly(address)).toBe(true);
    }
  });

  it('ignores a zone id, and never allows the never-ranges', () => {
    expect(publicAddressesOnly('fe80::1%eth0')).toBe(false);
    expect(privateAddressesAllowed('fe80::1%eth0')).toBe(true);
    expect(privateAddressesAllowed('ff02::1%eth0')).toBe(false);
    for (const address of ['0.0.0.0', '224.0.0.1', '255.255.255.255', '::', 'ff02::1', '::ffff:0.0.0.0']) expect(privateAddressesAllowed(address)).toBe(false);
    for (const address of ['example.com', '', '10.0.0.256']) expect(privateAddressesAllowed(address)).toBe(false);
    expect(publicAddressesOnly('2606:4700:4700::1111')).toBe(true);
  });

  it('opens exactly a trusted subnet, in either family and in its IPv6 spellings, and nothing next to it', () => {
    const trusting = publicAnd(['10.1.0.0/16', 'fd00:1::/32']);
    expect(trusting('10.1.2.3')).toBe(true);
    expect(trusting('::ffff:10.1.2.3')).toBe(true);
    expect(trusting('64:ff9b::10.1.2.3')).toBe(true);
    expect(trusting('2002:a01:203::')).toBe(true);
    expect(trusting('64:ff9b::10.2.0.1')).toBe(false);
    expect(trusting('10.2.0.1')).toBe(false);
    expect(trusting('fd00:1::5')).toBe(true);
    expect(trusting('fd00:2::5')).toBe(false);
    expect(trusting('fd00:1::5%eth0')).toBe(true);
    expect(trusting('8.8.8.8')).toBe(true);
    expect(trusting('127.0.0.1')).toBe(false);
    expect(publicAnd(['0.0.0.0/0'])('0.0.0.0')).toBe(false);
  });
});

/** The first and the last address of a block, spelled in full. */
function edgesOf(block: string, family: 'ipv4' | 'ipv6'): [string, string] {
  const [network, prefixText] = block.split('/') as [string, string];
  const bits = family === 'ipv4' ? 32 : 128;
  const value =
    family === 'ipv4'
      ? network.split('.').reduce((sum, byte) => (sum << 8n) | BigInt(byte), 0n)
      : embeddedGroups(network).reduce((sum, group) => (sum << 16n) | BigInt(group), 0n);
  const hostBits = BigInt(bits - Number(prefixText));
  const last = value | ((1n << hostBits) - 1n);
  const spell = (address: bigint) =>
    family === 'ipv4'
      ? [24n, 16n, 8n, 0n].map((shift) => String((address >> shift) & 0xffn)).join('.')
      : [112n, 96n, 80n, 64n, 48n, 32n, 16n, 0n].map((shift) => ((address >> shift) & 0xffffn).toString(16)).join(':');
  return [spell(value), spell(last)];
}

/** The eight groups of an IPv6 network address as the registry writes it (with `::`). */
function embeddedGroups(address: string): number[] {
  const [head, tail] = address.split('::') as [string, string | undefined];
  const headGroups = head ? head.split(':') : [];
  const tailGroups = tail ? tail.split(':') : [];
  const groups = tail === undefined ? headGroups : [...headGroups, ...Array<string>(8 - headGroups.length - tailGroups.length).fill('0'), ...tailGroups];
  return groups.map((group) => parseInt(group, 16));
}

/**
 * Every row of the IANA special-purpose registries (issue 28, point 14), at both edges of its block:
 * refused by default unless the registry calls it globally reachable; with private addresses
 * allowed, refused only when it is one of the never-rows; a block that carries an IPv4 address
 * judged as that address.
 */
describe('the special-purpose registries, row by row', () => {
  const rows = [
    ...ipv4SpecialPurpose.map((row) => ({ ...row, family: 'ipv4' as const })),
    ...ipv6SpecialPurpose.map((row) => ({ ...row, family: 'ipv6' as const })),
    ...otherRefusedBlocks,
  ];

  it.each(rows.map((row) => [row.block, row.name, row] as const))('%s, %s', (block, _name, row) => {
    for (const edge of edgesOf(block, row.family)) {
      const carried = row.family === 'ipv6' ? embeddedIpv4(edge) : null;
      if (row.carries) {
        expect(carried, edge).not.toBeNull();
        expect(publicAddressesOnly(edge), edge).toBe(publicAddressesOnly(carried!));
      } else if (row.reachable) {
        expect(publicAddressesOnly(edge), edge).toBe(true);
      } else {
        expect(publicAddressesOnly(edge), edge).toBe(false);
        // An edge that is itself the /96 form of local-use NAT64 is judged as the IPv4 address it carries.
        if (carried === null) expect(privateAddressesAllowed(edge), edge).toBe(!row.never);
      }
    }
  });

  it('allows a public IPv4 host through the blocks that carry one, and the reachable exceptions inside refused blocks', () => {
    for (const address of ['::ffff:8.8.8.8', '64:ff9b::8.8.8.8', '2002:808:808::1']) expect(publicAddressesOnly(address), address).toBe(true);
    for (const address of ['192.0.0.9', '192.0.0.10', '2001:1::1', '2001:1::2', '2001:1::3', '2001:3::1', '2001:4:112::1', '2001:20::1', '2001:30::1']) {
      expect(publicAddressesOnly(address), address).toBe(true);
    }
    for (const address of ['192.0.0.8', '192.0.0.11', '2001:1::4', '2001:4:113::1', '2001:10::1']) expect(publicAddressesOnly(address), address).toBe(false);
  });
});
