/**
 * The diagnostics channel on which the pool announces each statement it sends (see
 * `createPool`); the metrics subscribe to it, so neither side loads the other (nor the driver).
 */
export const STATEMENT_CHANNEL = 'ext-jwt-controller:db-statement'
