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
]

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
  'fec0::1',
  '::ffff:8.8.8.8',
  '::ffff:808:808',
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
