import type { MapNode } from './checker.js'
import type { TNode } from './tree.js'

/** A node as plain data. */
function plain(node: TNode): unknown {
  if (node.kind === 'scalar') return node.value
  if (node.kind === 'seq') return node.items.map(plain)
  return plainMap(node)
}

/** A map node as plain data (for open maps such as options and transport). */
export function plainMap(node: MapNode): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [key, { value }] of node.entries) out[key] = plain(value)
  return out
}
