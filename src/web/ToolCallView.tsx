import { toolCallCommand, type ToolCallDetail } from '@task-status/client'
import { diffLines } from './diff-lines.ts'
import './agent-detail.css'

/** rawInput as readable text: indented when it is JSON, as sent when it was cut (then it no longer parses). */
function rawInputText(rawInput: string): string {
  try {
    return JSON.stringify(JSON.parse(rawInput), null, 2)
  } catch {
    return rawInput
  }
}

/** A location as an editor names it: path, and `:line` when the agent gave one. */
const placeText = (l: ToolCallDetail['locations'][number]) => (l.line === null ? l.path : `${l.path}:${l.line}`)

/** One line for a closed <details>: the kind and what it touches or runs. */
export function toolCallSummary(detail: ToolCallDetail): string {
  const what = toolCallCommand(detail) ?? detail.diffs[0]?.path ?? detail.locations[0]?.path
  const more = Math.max(detail.diffs.length, detail.locations.length) > 1 ? ' …' : ''
  return [detail.kind ?? 'tool', what && `${what}${more}`].filter(Boolean).join(' · ')
}

/**
 * What a tool call does, as the agent described it: the files it touches, its edits (removed and
 * added lines), the command it runs, else its raw input. Every block wraps or scrolls inside itself,
 * so a long path or line never widens the page on a phone.
 */
export function ToolCallBody({ detail }: { detail: ToolCallDetail }) {
  const command = toolCallCommand(detail)
  // A diff's caption names its file (with the line a location gives it): the list holds the other places.
  const diffPaths = new Set(detail.diffs.map((d) => d.path))
  const places = detail.locations.filter((l) => !diffPaths.has(l.path))
  const lineOf = (file: string) => detail.locations.find((l) => l.path === file && l.line !== null)?.line ?? null
  return (
    <div className="tool-body" data-tool-kind={detail.kind ?? ''}>
      {detail.kind && (
        <p className="tool-kind">
          <span className="tool-label">Kind</span> {detail.kind}
        </p>
      )}
      {places.length > 0 && (
        <ul className="tool-places" aria-label="Files" tabIndex={0}>
          {places.map((l, i) => (
            <li key={i}>{placeText(l)}</li>
          ))}
        </ul>
      )}
      {detail.diffs.map((d, i) => (
        <figure className="tool-diff" key={i} data-path={d.path}>
          <figcaption>
            {placeText({ path: d.path, line: lineOf(d.path) })}
            {d.oldText === null && <span className="muted"> (new file)</span>}
          </figcaption>
          {/* Focusable so a keyboard can scroll a long edit; labelled by its file. */}
          <pre className="diff-lines" tabIndex={0} aria-label={`Changes to ${d.path}`}>
            {diffLines(d.oldText, d.newText).map((line, n) => (
              <span key={n} className={`diff-line ${line.mark === '-' ? 'del' : line.mark === '+' ? 'add' : 'ctx'}`}>
                {`${line.mark} ${line.text}`}
              </span>
            ))}
          </pre>
        </figure>
      ))}
      {command !== null ? (
        <pre className="tool-command" tabIndex={0} aria-label="Command">
          {`$ ${command}`}
        </pre>
      ) : (
        detail.diffs.length === 0 &&
        detail.rawInput !== null && (
          <pre className="tool-raw" tabIndex={0} aria-label="Input">
            {rawInputText(detail.rawInput)}
          </pre>
        )
      )}
      {detail.truncated && <p className="tool-truncated">Truncated: the agent sent more than the server keeps.</p>}
    </div>
  )
}

/** A transcript entry's tool call detail, closed until asked for. */
export function ToolCallDetails({ detail }: { detail: ToolCallDetail }) {
  return (
    <details className="tool-details">
      <summary>{toolCallSummary(detail)}</summary>
      <ToolCallBody detail={detail} />
    </details>
  )
}
