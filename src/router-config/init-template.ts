/** A complete standard router configuration (the seed's standard sections), accepted with no warnings. */
export const INIT_TEMPLATE = `# Router configuration (format version 3). Check it with: npm run -s router-config -- check FILE
v: 3

identity:
  cert: /etc/ziti/router/client.cert
  server_cert: /etc/ziti/router/server.chain.cert
  key: /etc/ziti/router/router.key
  ca: /etc/ziti/router/ca.cert

ctrl:
  endpoint: tls:ctrl.example.com:6262
  defaultRequestTimeout: 5s

link:
  dialers:
    - binding: transport
      healthyDialBackoff:
        minRetryInterval: 5s
        maxRetryInterval: 5m
        retryBackoffFactor: 1.5
      unhealthyDialBackoff:
        minRetryInterval: 1m
        maxRetryInterval: 1h
        retryBackoffFactor: 10
  listeners:
    - binding: transport
      bind: tls:0.0.0.0:10080
      advertise: tls:router.example.com:10080

listeners:
  - binding: edge
    address: tls:0.0.0.0:3022
    options:
      advertise: router.example.com:3022
  - binding: tunnel
    options:
      mode: host

dialers:
  - binding: transport

edge:
  csr:
    country: US
    province: NC
    locality: Charlotte
    organization: Example
    organizationalUnit: Ops
    sans:
      dns:
        - router.example.com
        - localhost
      ip:
        - 127.0.0.1

forwarder:
  faultTxInterval: 15000
  idleCircuitTimeout: 60000
  idleTxInterval: 60000
  linkDialQueueLength: 1000
  linkDialWorkerCount: 32
  rateLimitedQueueLength: 5000
  rateLimitedWorkerCount: 5
  xgressDialQueueLength: 1000
  xgressDialWorkerCount: 128

healthChecks:
  ctrlPingCheck:
    interval: 30s
    timeout: 15s
    initialDelay: 15s
  linkCheck:
    interval: 5s
    initialDelay: 1s
    minLinks: 0

metrics:
  reportInterval: 1m
  messageQueueSize: 10
  intervalAgeThreshold: 80s

web:
  - name: health-checks
    bindPoints:
      - interface: 127.0.0.1:8081
        address: 127.0.0.1:8081
    apis:
      - binding: health-checks
`
