import { describe, expect, it } from 'vitest'
import { addressRefusal, type FetchPolicy, urlRefusal } from '../../src/jwt/ssrf-policy.js'

const OPEN: FetchPolicy = { allowHttp: true, blockPrivate: false }
const STRICT: FetchPolicy = { allowHttp: false, blockPrivate: true }

// Each range at its first and last address, and its IPv4-mapped IPv6 forms.
const ALWAYS_REFUSED = [
  '169.254.0.0',
  '169.254.169.254',
  '169.254.255.255',
  '224.0.0.0',
  '239.255.255.255',
  '255.255.255.255',
  '0.0.0.0',
  '0.255.255.255',
  'fe80::',
  'fe80::1',
  'febf:ffff::1',
  'fd00:ec2::254',
  'ff00::',
  'ff02::1',
  '::',
  '::ffff:169.254.169.254',
  '::ffff:a9fe:a9fe',
  '::FFFF:A9FE:A9FE',
  '::ffff:224.0.0.1',
  '::ffff:0.0.0.0',
  '100.100.100.200',
]

// Issue 29 item 4: every IPv6 form that carries the metadata address 169.254.169.254.
const METADATA_FORMS = [
  ['IPv4-mapped', '::ffff:a9fe:a9fe'],
  ['SIIT', '::ffff:0:a9fe:a9fe'],
  ['SIIT, dotted', '::ffff:0:169.254.169.254'],
  ['IPv4-compatible', '::a9fe:a9fe'],
  ['IPv4-compatible, dotted', '::169.254.169.254'],
  ['NAT64 well-known prefix', '64:ff9b::a9fe:a9fe'],
  ['NAT64 well-known prefix, dotted', '64:ff9b::169.254.169.254'],
  ['NAT64 local-use /96', '64:ff9b:1::a9fe:a9fe'],
  ['NAT64 local-use /48', '64:ff9b:1:a9fe:a9:fe00::'],
  ['NAT64 local-use /56', '64:ff9b:1:a9:fe:a9fe::'],
  ['NAT64 local-use /64', '64:ff9b:1:0:a9:fea9:fe00:0'],
  ['6to4', '2002:a9fe:a9fe::'],
  ['6to4 with a host part', '2002:a9fe:a9fe:1::1'],
  ['Teredo server', '2001:0:a9fe:a9fe::1'],
  ['Teredo client (bits inverted)', '2001:0:102:304::5601:5601'],
  ['with a zone', 'fe80::1%eth0'],
  ['Alibaba metadata, mapped', '::ffff:6464:64c8'],
  ['Alibaba metadata, NAT64', '64:ff9b::100.100.100.200'],
] as const

// The same forms of loopback, and the ranges refused only with blockPrivate.
const PRIVATE_FORMS = [
  ['SIIT loopback', '::ffff:0:7f00:1'],
  ['IPv4-compatible loopback', '::7f00:1'],
  ['NAT64 loopback', '64:ff9b::7f00:1'],
  ['6to4 loopback', '2002:7f00:1::'],
  ['Teredo server loopback', '2001:0:7f00:1::f7f7:f7f7'],
  ['Teredo client loopback', '2001:0:102:304::80ff:fffe'],
  ['NAT64 of 10.0.0.1', '64:ff9b::a00:1'],
  ['site-local', 'fec0::1'],
  ['site-local, last', 'feff:ffff::1'],
  ['IETF protocol assignments', '192.0.0.170'],
  ['IETF protocol assignments, first', '192.0.0.0'],
  ['IETF protocol assignments, last', '192.0.0.255'],
  ['benchmarking', '198.18.0.1'],
  ['benchmarking, last', '198.19.255.255'],
  ['reserved', '240.0.0.1'],
  ['reserved, last', '255.255.255.254'],
  ['CGNAT, mapped', '::ffff:100.64.0.1'],
  ['6to4 of benchmarking', '2002:c612:1::'],
] as const

const PRIVATE = [
  '127.0.0.1',
  '127.255.255.255',
  '10.0.0.0',
  '10.255.255.255',
  '172.16.0.0',
  '172.31.255.255',
  '192.168.0.0',
  '192.168.255.255',
  '100.64.0.0',
  '100.127.255.255',
  '::1',
  'fc00::',
  'fdff:ffff::1',
  '::ffff:127.0.0.1',
  '::ffff:7f00:1',
  '::ffff:10.1.2.3',
  '::ffff:c0a8:101',
]

const PUBLIC = [
  '1.1.1.1',
  '8.8.8.8',
  '9.255.255.255',
  '11.0.0.0',
  '100.63.255.255',
  '100.128.0.0',
  '126.255.255.255',
  '128.0.0.0',
  '169.253.255.255',
  '169.255.0.0',
  '172.15.255.255',
  '172.32.0.0',
  '192.167.255.255',
  '192.169.0.0',
  '223.255.255.255',
  '2001:db8::1',
  '2606:4700::1111',
  'fe7f::1',
  '::ffff:8.8.8.8',
  '::ffff:808:808',
  '192.0.1.0',
  '198.17.255.255',
  '198.20.0.0',
  '223.0.0.0',
  '2a00::1',
  '64:ff9b::808:808',
  '2002:808:808::',
  '2001:0:808:808::f7f7:f7f7',
  '::ffff:0:808:808',
  '64:ff9b:2::a9fe:a9fe',
  '2003::a9fe:a9fe',
  '2001:1::a9fe:a9fe',
]

describe('addressRefusal', () => {
  it.each(ALWAYS_REFUSED)('refuses %s whatever the settings', (address) => {
    expect(addressRefusal(address, OPEN)).toMatch(/never fetched from/)
    expect(addressRefusal(address, STRICT)).toMatch(/never fetched from/)
  })

  it.each(PRIVATE)('refuses %s only with blockPrivate', (address) => {
    expect(addressRefusal(address, OPEN)).toBeUndefined()
    expect(addressRefusal(address, { allowHttp: true, blockPrivate: true })).toMatch(/private/)
  })

  it.each(METADATA_FORMS)('refuses the %s form %s whatever the settings', (_form, address) => {
    expect(addressRefusal(address, OPEN)).toMatch(/never fetched from/)
    expect(addressRefusal(address, STRICT)).toMatch(/never fetched from/)
  })

  it.each(PRIVATE_FORMS)('refuses %s (%s) only with blockPrivate', (_form, address) => {
    expect(addressRefusal(address, OPEN)).toBeUndefined()
    expect(addressRefusal(address, STRICT)).toMatch(/private/)
  })

  it('keeps :: and ::1 as IPv6 addresses rather than IPv4-compatible ones', () => {
    expect(addressRefusal('::1', OPEN)).toBeUndefined()
    expect(addressRefusal('::1', STRICT)).toMatch(/private/)
    expect(addressRefusal('::', OPEN)).toMatch(/never fetched from/)
  })

  it.each(PUBLIC)('allows %s under both settings', (address) => {
    expect(addressRefusal(address, OPEN)).toBeUndefined()
    expect(addressRefusal(address, STRICT)).toBeUndefined()
  })
})

describe('urlRefusal', () => {
  it.each([
    ['http://1.1.1.1/jwks', OPEN, undefined],
    ['https://idp.example/jwks', STRICT, undefined],
    ['http://idp.example/jwks', STRICT, 'the scheme must be https'],
    ['https://[2606:4700::1111]/jwks', STRICT, undefined],
    // Names are checked when they resolve, at connect time, not here.
    ['https://localhost/jwks', STRICT, undefined],
  ] as const)('%s', (url, policy, refusal) => {
    expect(urlRefusal(url, policy)).toBe(refusal)
  })

  it.each([
    'http://169.254.169.254/latest/meta-data',
    'http://[fe80::1]/',
    'http://[fd00:ec2::254]/',
    'http://[::ffff:169.254.169.254]/',
    'http://[::ffff:a9fe:a9fe]/',
    'http://0.0.0.0/',
    'http://224.0.0.1/',
    // The URL parser's normal form of odd IPv4 spellings is what gets checked.
    'http://0xa9fea9fe/',
    'http://2852039166/',
    'http://169.254.43518/',
    'http://0251.0376.0251.0376/',
    'http://100.100.100.200/',
    'http://[64:ff9b::169.254.169.254]/',
    'http://[2002:a9fe:a9fe::]/',
    'http://[::ffff:0:a9fe:a9fe]/',
    'http://[::169.254.169.254]/',
  ])('refuses %s under both settings', (url) => {
    expect(urlRefusal(url, OPEN)).toMatch(/never fetched from/)
    expect(urlRefusal(url.replace('http:', 'https:'), STRICT)).toMatch(/never fetched from/)
  })

  it.each([
    'https://127.0.0.1/',
    'https://0x7f.1/',
    'https://2130706433/',
    'https://[::1]/',
    'https://[::ffff:127.0.0.1]/',
    'https://10.0.0.1:8443/jwks',
    'https://[fc00::1]/',
  ])('refuses %s only with blockPrivate', (url) => {
    expect(urlRefusal(url, OPEN)).toBeUndefined()
    expect(urlRefusal(url, STRICT)).toMatch(/private/)
  })

  it.each([
    'https://user:pw@idp.example/jwks',
    'https://user@idp.example/jwks',
    'https://:pw@idp.example/jwks',
  ])('refuses the user info of %s', (url) => {
    expect(urlRefusal(url, OPEN)).toMatch(/user name or password/)
    expect(urlRefusal(url, STRICT)).toMatch(/user name or password/)
  })

  it.each(['', 'not a url', '/relative/jwks', 'http://', 'http://[::1/', 'http://a b/'])(
    'refuses the bad URL %j',
    (url) => {
      expect(urlRefusal(url, OPEN)).toBe('not a URL')
    },
  )

  it.each(['file:///etc/passwd', 'ftp://idp.example/jwks', 'gopher://x/', 'data:,{}', 'ws://x/'])(
    'refuses the scheme of %s',
    (url) => {
      expect(urlRefusal(url, OPEN)).toBe('the scheme must be http or https')
      expect(urlRefusal(url, STRICT)).toBe('the scheme must be https')
    },
  )
})
