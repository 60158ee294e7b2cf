/** The effective configuration of a router: what the file says, with every default filled in. */
export interface RouterConfig {
  v: 3
  identity: IdentityConfig
  ctrl: CtrlConfig
  dialers?: { binding: string; options?: Record<string, unknown> }[]
  edge?: EdgeConfig
  forwarder: ForwarderConfig
  healthChecks: HealthChecksConfig
  link?: LinkConfig
  listeners?: ListenerConfig[]
  metrics: MetricsConfig
  trace?: { path: string }
  transport?: Record<string, unknown>
  profile: ProfileConfig
  web?: WebConfig[]
}

export interface IdentityConfig {
  cert?: string
  server_cert?: string
  key?: string
  server_key?: string
  ca?: string
  alt_server_certs?: { server_cert: string; server_key?: string }[]
}

export interface CtrlConfig {
  endpoint?: string
  endpoints?: string[]
  bind?: string
  defaultRequestTimeout: string
  heartbeats?: Record<string, unknown>
  options?: Record<string, unknown>
}

export interface EdgeConfig {
  csr?: {
    country?: string
    province?: string
    locality?: string
    organization?: string
    organizationalUnit?: string
    sans: { dns: string[]; ip: string[]; uri: string[]; email: string[] }
  }
  [key: string]: unknown
}

export interface ForwarderConfig {
  faultTxInterval: number
  idleCircuitTimeout: number
  idleTxInterval: number
  linkDialQueueLength: number
  linkDialWorkerCount: number
  rateLimitedQueueLength: number
  rateLimitedWorkerCount: number
  xgressCloseCheckInterval: number
  xgressDialDwellTime: number
  xgressDialQueueLength: number
  xgressDialWorkerCount: number
  latencyProbeInterval?: number
}

export interface HealthChecksConfig {
  ctrlPingCheck: { interval: string; timeout: string; initialDelay: string }
  linkCheck: { interval: string; initialDelay: string; minLinks: number }
}

export interface Backoff {
  minRetryInterval: string
  maxRetryInterval: string
  retryBackoffFactor: number
}

export interface LinkConfig {
  listeners: {
    binding: 'transport'
    bind: string
    advertise: string
    groups: string[]
    options?: Record<string, unknown>
  }[]
  dialers: {
    binding: 'transport'
    bind?: string
    split: boolean
    groups: string[]
    options?: Record<string, unknown>
    healthyDialBackoff: Backoff
    unhealthyDialBackoff: Backoff
  }[]
}

export interface ListenerConfig {
  binding: string
  address?: string
  advertise?: string
  /** A proxy or proxy_udp listener's service. */
  service?: string
  options?: Record<string, unknown>
}

export interface MetricsConfig {
  reportInterval: string
  messageQueueSize: number
  intervalAgeThreshold: string
}

export interface ProfileConfig {
  cpu?: { path: string }
  memory?: { path: string; intervalMs: number }
}

export interface WebConfig {
  name: string
  bindPoints: { interface: string; address: string; newAddress?: string }[]
  apis: { binding: 'health-checks'; options?: Record<string, unknown> }[]
  identity?: IdentityConfig
  options?: Record<string, unknown>
}
