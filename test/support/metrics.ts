/** Prometheus text of a server's /metrics: the sum of a metric's samples whose labels include `labels`. */
export async function scrapeMetric(baseUrl: string, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text()
  let sum = 0
  for (const line of text.split('\n')) {
    const match = /^([a-z_]+)(\{[^}]*\})? ([0-9.e+-]+)$/.exec(line)
    if (!match || match[1] !== name) continue
    if (Object.entries(labels).every(([k, v]) => (match[2] ?? '').includes(`${k}="${v}"`))) sum += Number(match[3])
  }
  return sum
}
