/** The client view of one controller, as enrollment answers carry it (OpenZiti 2.1 `controllers`). */
export interface ControllerSummary {
  id: string
  name: string
  apiAddresses: Record<string, { url: string; version: string }[]>
  isOnline: boolean
}

/** The controllers a client may use; the controllers list (a registry in the store) plugs in here. */
export type ControllerDirectory = () => Promise<ControllerSummary[]>

/** This instance alone: until controllers register themselves, it is the only one clients learn. */
export function singleController(o: { name: string; baseUrl: string }): ControllerDirectory {
  const address = (path: string) => [{ url: `${o.baseUrl}${path}`, version: 'v1' }]
  const self: ControllerSummary = {
    id: o.name,
    name: o.name,
    apiAddresses: {
      'edge-client': address('/edge/client/v1'),
      'edge-management': address('/edge/management/v1'),
    },
    isOnline: true,
  }
  return async () => [self]
}
