/** The client view of one controller, as enrollment answers carry it (OpenZiti 2.1 `controllers`). */
export interface ControllerSummary {
  id: string
  name: string
  apiAddresses: Record<string, { url: string; version: string }[]>
  isOnline: boolean
}

/** The controllers a client may use: the controllers list's client view (`ControllerRegistry.summaries`). */
export type ControllerDirectory = () => Promise<ControllerSummary[]>
