import { describe, expect, it } from 'vitest';
import { embeddedIpv4, privateAddressesAllowed, publicAddressesOnly, publicAnd } from '../../src/callbacks/addresses.ts';
import { signatureHeaderValue, verifySignature } from '../../src/callbacks/signing.ts';

/** The SSRF guard's judgement per address (decisions section 7), and the signature format. */
const refusedByDefault = [
  '127.0.0.1',
  '127.1.2.3',
  '10.0.0.1',
  '172.16.0.1',
  '172.31.255.255',
  '192.168.1.1',
  '169.254.169.254',
  '169.254.1.1',
  '100.64.0.1',
  '100.127.255.254',
  '0.0.0.0',
  '224.0.0.1',
  '255.255.255.255',
  '::1',
  '::',
  'fc00::1',
  'fd00:ec2::254',
  'fe80::1',
  'ff02::1',
  '::ffff:127.0.0.1',
  '::ffff:7f00:1',
  '::ffff:10.0.0.1',
  '::ffff:169.254.169.254',
  '64:ff9b::a00:1',
  '2002:a00:1::1',
  'not an address',
  '64:ff9b:1::a00:1',
  '64:ff9b:1::7f00:1',
  '64:ff9b:1:abcd::1',
  '::ffff:0:127.0.0.1',
  '::ffff:0:a00:1',
  '2001::1',
  '2001:0:4136:e378:8000:63bf:3fff:fdd2',
  'fec0::1',
  'feff::1',
  // Each range at its edges, so that removing one fails here (issue 16, point 8).
  '198.18.0.0',
  '198.19.255.255',
  '192.0.0.0',
  '192.0.0.255',
  // IPv4-compatible (::a.b.c.d): judged as the IPv4 address it carries.
  '::127.0.0.1',
  '::7f00:1',
  '::a00:1',
  '::10.0.0.1',
  '::169.254.169.254',
  // Special-purpose blocks that are not globally reachable (issue 28, point 14): documentation,
  // the deprecated 6to4 relay anycast, discard-only, benchmarking, and the same carried in IPv6.
  '192.0.2.1',
  '198.51.100.7',
  '203.0.113.255',
  '192.88.99.1',
  '192.0.0.8',
  '192.0.0.170',
  '2001:db8::1',
  '2001:db8:ffff::1',
  '100::1',
  '100::ffff:1',
  '100:0:0:1::1',
  '2001:2::1',
  '2001:10::1',
  '3fff::1',
  '5f00::1',
  '::ffff:192.0.2.1',
  '64:ff9b::203.0.113.9',
  '2002:c000:0201::1',
];
const publicAddresses = [
  '8.8.8.8',
  '1.1.1.1',
  '172.32.0.1',
  '100.128.0.1',
  '198.17.255.255',
  '198.20.0.0',
  '192.0.1.0',
  '::8.8.8.8',
  // Next to the documentation and relay blocks, and the globally reachable rows of the registries.
  '192.0.1.255',
  '192.0.3.0',
  '198.51.99.255',
  '198.51.101.0',
  '203.0.112.255',
  '203.0.114.0',
  '192.88.98.255',
  '192.88.100.0',
  '2001:db7:ffff::1',
  '2001:db9::1',
  '100:0:0:2::1',
  '192.0.0.9',
  '192.0.0.10',
  '192.31.196.1',
  '192.52.193.1',
  '192.175.48.1',
  '2001:1::1',
  '2001:3::1',
  '2620:4f:8000::1',
  '2606:4700:4700::1111',
  '::ffff:8.8.8.8',
  '64:ff9b:1::808:808',
  '::ffff:0:8.8.8.8',
  '2001:4860:4860::8888',
];

describe('the callback address guard', () => {
  it.each(refusedByDefault)('refuses %s by default', (address) => {
    expect(publicAddressesOnly(address)).toBe(false);
  });

  it.each(publicAddresses)('allows public %s', (address) => {
    expect(publicAddressesOnly(address)).toBe(true);
    expect(privateAddressesAllowed(address)).toBe(true);
  });

  it('with CALLBACK_ALLOW_PRIVATE allows private ranges but never unspecified or multicast ones', () => {
    for (const address of ['127.0.0.1', '10.0.0.1', '192.168.1.1', '::1', 'fd00::1', '::ffff:127.0.0.1']) expect(privateAddressesAllowed(address)).toBe(true);
    for (const address of ['0.0.0.0', '::', '224.0.0.1', 'ff02::1', '::ffff:0.0.0.0']) expect(privateAddressesAllowed(address)).toBe(false);
  });

  it('trusting one range allows exactly that range', () => {
    const loopbackOnly = publicAnd(['127.0.0.0/8']);
    expect(loopbackOnly('127.0.0.1')).toBe(true);
    expect(loopbackOnly('::ffff:127.0.0.1')).toBe(true);
    expect(loopbackOnly('8.8.8.8')).toBe(true);
    for (const address of ['10.0.0.1', '192.168.0.1', '169.254.169.254', '::1', '0.0.0.0']) expect(loopbackOnly(address)).toBe(false);
  });

  it('reads the IPv4 address inside mapped, translated, compatible, NAT64 (well-known and local-use) and 6to4 IPv6 addresses', () => {
    expect(embeddedIpv4('::ffff:10.1.2.3')).toBe('10.1.2.3');
    expect(embeddedIpv4('::ffff:a01:203')).toBe('10.1.2.3');
    expect(embeddedIpv4('64:ff9b::a01:203')).toBe('10.1.2.3');
    expect(embeddedIpv4('2002:a01:203::')).toBe('10.1.2.3');
    expect(embeddedIpv4('64:ff9b:1::a01:203')).toBe('10.1.2.3');
    expect(embeddedIpv4('::ffff:0:10.1.2.3')).toBe('10.1.2.3');
    expect(embeddedIpv4('::ffff:0:a01:203')).toBe('10.1.2.3');
    expect(embeddedIpv4('::a01:203')).toBe('10.1.2.3');
    expect(embeddedIpv4('::10.1.2.3')).toBe('10.1.2.3');
    // ::1 and :: are IPv6's own loopback and unspecified addresses, not IPv4-compatible ones.
    expect(embeddedIpv4('::1')).toBeNull();
    expect(embeddedIpv4('::')).toBeNull();
    expect(embeddedIpv4('2606:4700::1111')).toBeNull();
  });
});

describe('callback signatures', () => {
  it('verify with the secret and timestamp they were made with, within the tolerance', () => {
    const header = signatureHeaderValue('cbs_secret', 1_700_000_000, '{"a":1}');
    expect(header).toMatch(/^t=1700000000,v1=[0-9a-f]{64}$/);
    expect(verifySignature('cbs_secret', header, '{"a":1}', 1_700_000_100)).toBe(true);
    expect(verifySignature('cbs_secret', header, '{"a":2}', 1_700_000_100)).toBe(false);
    expect(verifySignature('cbs_other', header, '{"a":1}', 1_700_000_100)).toBe(false);
    expect(verifySignature('cbs_secret', header, '{"a":1}', 1_700_001_000)).toBe(false);
    expect(verifySignature('cbs_secret', 'garbage', '{"a":1}', 1_700_000_100)).toBe(false);
  });
});
