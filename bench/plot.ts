// A line plot as a standalone SVG (no plotting dependency for one chart): each series a polyline
// over shared axes, a legend, ticks at round values. Used for P5's latency against subscribers.

const COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b']

function niceStep(span: number, ticks: number): number {
  const raw = span / ticks
  const power = 10 ** Math.floor(Math.log10(raw))
  const scaled = raw / power
  return (scaled <= 1 ? 1 : scaled <= 2 ? 2 : scaled <= 5 ? 5 : 10) * power
}

const escape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')

export function latencyPlot(series: Record<string, Array<{ x: number; y: number }>>, labels: { title: string; x: string; y: string }): string {
  const width = 720
  const height = 420
  const m = { left: 70, right: 200, top: 40, bottom: 55 }
  const points = Object.values(series).flat()
  const xMax = Math.max(1, ...points.map((p) => p.x))
  const yMax = Math.max(1, ...points.map((p) => p.y))
  const xStep = niceStep(xMax, 5)
  const yStep = niceStep(yMax, 5)
  const xTop = Math.ceil(xMax / xStep) * xStep
  const yTop = Math.ceil(yMax / yStep) * yStep
  const px = (x: number) => m.left + (x / xTop) * (width - m.left - m.right)
  const py = (y: number) => height - m.bottom - (y / yTop) * (height - m.top - m.bottom)
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="${m.left}" y="22" font-size="15" font-weight="bold">${escape(labels.title)}</text>`,
  ]
  for (let x = 0; x <= xTop; x += xStep)
    out.push(`<line x1="${px(x)}" x2="${px(x)}" y1="${py(0)}" y2="${py(yTop)}" stroke="#eee"/>`, `<text x="${px(x)}" y="${py(0) + 18}" text-anchor="middle">${x}</text>`)
  for (let y = 0; y <= yTop; y += yStep)
    out.push(`<line x1="${px(0)}" x2="${px(xTop)}" y1="${py(y)}" y2="${py(y)}" stroke="#eee"/>`, `<text x="${px(0) - 8}" y="${py(y) + 4}" text-anchor="end">${y}</text>`)
  out.push(
    `<line x1="${px(0)}" x2="${px(xTop)}" y1="${py(0)}" y2="${py(0)}" stroke="black"/>`,
    `<line x1="${px(0)}" x2="${px(0)}" y1="${py(0)}" y2="${py(yTop)}" stroke="black"/>`,
    `<text x="${(px(0) + px(xTop)) / 2}" y="${height - 12}" text-anchor="middle">${escape(labels.x)}</text>`,
    `<text transform="translate(18 ${(py(0) + py(yTop)) / 2}) rotate(-90)" text-anchor="middle">${escape(labels.y)}</text>`,
  )
  Object.entries(series).forEach(([name, data], i) => {
    const color = COLORS[i % COLORS.length]
    const dashed = /raw|baseline/i.test(name) ? ' stroke-dasharray="6 4"' : ''
    const sorted = [...data].sort((a, b) => a.x - b.x)
    out.push(`<polyline fill="none" stroke="${color}" stroke-width="2"${dashed} points="${sorted.map((p) => `${px(p.x).toFixed(1)},${py(p.y).toFixed(1)}`).join(' ')}"/>`)
    for (const p of sorted) out.push(`<circle cx="${px(p.x).toFixed(1)}" cy="${py(p.y).toFixed(1)}" r="3" fill="${color}"/>`)
    const ly = m.top + 10 + i * 20
    out.push(`<line x1="${width - m.right + 15}" x2="${width - m.right + 45}" y1="${ly}" y2="${ly}" stroke="${color}" stroke-width="2"${dashed}/>`, `<text x="${width - m.right + 52}" y="${ly + 4}">${escape(name)}</text>`)
  })
  out.push('</svg>')
  return out.join('\n') + '\n'
}
