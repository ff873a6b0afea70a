import { describe, expect, it } from 'vitest'
import { MessageType, stringifyMessage } from 'graphql-ws'
import { frameHeader } from '../../src/delivery/frame-routing.ts'

describe('frameHeader: the id and type of an outgoing graphql-ws frame without parsing its payload', () => {
  const ids = ['1', 'op-"quoted"', 'back\\slash', 'uni\u00e9\u{1F600}', '","type":"complete', 'line\nbreak']
  const frames = [
    ...ids.flatMap((id) => [
      stringifyMessage({ id, type: MessageType.Next, payload: { data: { x: `"id":"fake","type":"error"` } } }),
      stringifyMessage({ id, type: MessageType.Error, payload: [{ message: 'boom' }] }),
      stringifyMessage({ id, type: MessageType.Complete }),
    ]),
    stringifyMessage({ type: MessageType.ConnectionAck }),
    stringifyMessage({ type: MessageType.Pong, payload: { a: 1 } }),
  ]

  it.each(frames)('reads what JSON.parse reads: %s', (frame) => {
    const parsed = JSON.parse(frame) as { id?: string; type: string }
    const { id, type } = frameHeader(frame)
    expect({ id, type }).toEqual({ id: parsed.id, type: parsed.type })
  })
})
