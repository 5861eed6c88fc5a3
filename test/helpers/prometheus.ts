/**
 * @module test/helpers/prometheus
 * Reads Prometheus' text exposition (what `/metrics` answers) into samples, for the tests
 * that check what the metrics say.
 */

export interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

/** The exposition text → its samples (comments and blank lines skipped). */
export function parseMetrics(text: string): Sample[] {
  const out: Sample[] = []
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (!m) continue
    const labels: Record<string, string> = {}
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!
    out.push({ name: m[1]!, labels, value: Number(m[3]) })
  }
  return out
}
