/*
 * Request bodies of OpenZiti's CLI, as its source builds them (openziti/ziti ziti/cmd/edge
 * create_extjwtsigner.go and update_extjwtsigner.go, the JSON tags of openziti/edge-api rest_model,
 * sdk-golang edge-apis credentials): facts restated, no code copied.
 */

/** What the Go SDK adds to every authenticate body (edge-apis BaseCredentials.Payload). */
export const SDK_INFO = {
  envInfo: { arch: 'amd64', os: 'linux', osRelease: '6.8.0', osVersion: '#1 SMP', hostname: 'ops' },
  sdkInfo: { appId: 'ziti', appVersion: 'v1.6.0', type: 'ziti-sdk-golang', version: 'v1.2.0' },
}

export interface CreateFlags {
  audience: string // -a (the CLI refuses to send a create without it)
  jwksEndpoint?: string // -u
  certPem?: string // -p, or the content of -f
  kid?: string // -k
  claimsProperty?: string // -c, default "sub"
  externalId?: boolean // -x, default true
  enabled?: boolean // -e, default true
  externalAuthUrl?: string // -y, default ""
  clientId?: string // --client-id
  scopes?: string[] // --scopes
  tags?: Record<string, unknown> // -t / --tags-json
}

/** The body `ziti edge create ext-jwt-signer NAME ISSUER ...flags` sends. */
export function createBody(name: string, issuer: string, f: CreateFlags): Record<string, unknown> {
  return {
    audience: f.audience,
    claimsProperty: f.claimsProperty ?? 'sub',
    enabled: f.enabled ?? true,
    externalAuthUrl: f.externalAuthUrl ?? '',
    issuer,
    name,
    scopes: f.scopes?.length ? f.scopes : null, // no omitempty: an unset slice is null
    tags: f.tags ?? {},
    useExternalId: f.externalId ?? true,
    // -u clears certPem and kid; otherwise jwksEndpoint is dropped and the two are sent, "" or not.
    ...(f.jwksEndpoint
      ? { jwksEndpoint: f.jwksEndpoint }
      : { certPem: f.certPem ?? '', kid: f.kid ?? '' }),
    ...(f.clientId ? { clientId: f.clientId } : {}), // "" becomes nil, omitted
  }
}

/** The body `ziti edge update ext-jwt-signer X ...flags` PATCHes: changed flags, scopes, tags. */
export const patchBody = (changed: Record<string, unknown>) => ({
  scopes: null,
  tags: {},
  ...changed,
})
