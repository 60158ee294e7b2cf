import { setFlagsFromString } from 'node:v8'

/**
 * V8 settings of the controller process, applied before anything else loads.
 *
 * undici (JWKS fetches) parses HTTP with a WebAssembly build of llhttp. Optimising that module with
 * TurboFan leaves about 25 MB of compiler memory resident for good, for a parser that runs a few
 * times a minute; its baseline (Liftoff) code is plenty. The controller runs no other WebAssembly.
 */
setFlagsFromString('--liftoff-only')
