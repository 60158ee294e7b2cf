import { onTestFinished } from 'vitest'
import { startMetricsListener } from '../../src/metrics/listener.js'
import { createMetrics, type Metrics } from '../../src/metrics.js'
import { buildTestApp } from '../helpers/app.js'

/** One sample of the exposition: its metric name, labels and value. */
export interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

/** Parses the Prometheus text format (the subset prom-client writes). */
export function parseExposition(text: string): Sample[] {
  const samples: Sample[] = []
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (!m) throw new Error(`not an exposition line: ${line}`)
    const labels: Record<string, string> = {}
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1] as string] = (l[2] as string).replace(/\\(.)/g, '$1')
    samples.push({ name: m[1] as string, labels, value: Number(m[3]) })
  }
  return samples
}

/** The scrape of a metrics listener, with lookups by name and (a subset of) labels. */
export async function scrape(url: string) {
  const res = await fetch(url)
  if (res.status !== 200) throw new Error(`scrape answered ${res.status}`)
  const contentType = res.headers.get('content-type') ?? ''
  const samples = parseExposition(await res.text())
  const matching = (name: string, labels: Record<string, string> = {}) =>
    samples.filter(
      (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
    )
  return {
    contentType,
    samples,
    matching,
    /** The one sample's value, 0 when the series does not exist (yet). */
    value: (name: string, labels: Record<string, string> = {}) => {
      const found = matching(name, labels)
      if (found.length > 1) throw new Error(`${found.length} series of ${name} match`)
      return found[0]?.value ?? 0
    },
  }
}

/** The real app counting into its own metrics, served on a real listener on 127.0.0.1. */
export async function buildMeteredApp(options: Parameters<typeof buildTestApp>[0] = {}) {
  const metrics: Metrics = createMetrics()
  const app = await buildTestApp({ ...options, metrics })
  const listener = await startMetricsListener(metrics, '127.0.0.1', 0)
  onTestFinished(listener.close)
  return { app, metrics, url: listener.url, scrape: () => scrape(listener.url) }
}
