import type { ExecutionResult } from 'graphql'
import type { Plugin } from 'graphql-yoga'
import { toClientErrors, type ErrorCounter } from '../../contract/client-errors.ts'
import type { Context } from '../../schema/context.ts'
import { isAsyncIterable } from '../../util/async-iterators.ts'

/** What Yoga's result processors can answer with. */
const RESPONSE_MEDIA_TYPES = ['application/graphql-response+json', 'application/json', 'text/event-stream', 'multipart/mixed']

function acceptsAResponse(header: string | null): boolean {
  if (!header) return true
  return header.split(',').some((part) => {
    const type = part.split(';', 1)[0]!.trim().toLowerCase()
    if (type === '' || type === '*/*') return true
    if (type.endsWith('/*')) return RESPONSE_MEDIA_TYPES.some((t) => t.startsWith(type.slice(0, -1)))
    return RESPONSE_MEDIA_TYPES.includes(type)
  })
}

function jsonError(fetchAPI: { Response: typeof Response }, status: number, message: string, headers: Record<string, string> = {}): Response {
  const body = { errors: [{ message, extensions: { code: 'BAD_USER_INPUT' } }] }
  return new fetchAPI.Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json; charset=utf-8', ...headers } })
}

/**
 * Every HTTP response of /graphql passes here once: request errors Yoga answers itself (invalid JSON,
 * missing query, GET mutation, unsupported media type), validation and variable errors, limits and
 * execution errors. The WebSocket gateway applies the same toClientError in its onNext/onError.
 */
export function errorCodesPlugin(count: ErrorCounter): Plugin<Context> {
  return {
    onRequestParse({ request, requestParser, endResponse, fetchAPI }) {
      // Yoga would only find out after executing (a mutation would have run) and answer with an empty 406.
      if (!acceptsAResponse(request.headers.get('accept'))) {
        count('BAD_USER_INPUT')
        const offered = RESPONSE_MEDIA_TYPES.join(', ')
        return endResponse(jsonError(fetchAPI, 406, `The Accept header allows none of: ${offered}.`, { accept: offered }))
      }
      // Yoga answers an unknown POST media type with an empty 415; other methods get its own 405 with a body.
      if (requestParser || request.method !== 'POST') return
      count('BAD_USER_INPUT')
      const accepted = 'application/json, application/graphql+json, multipart/form-data, application/x-www-form-urlencoded'
      endResponse(jsonError(fetchAPI, 415, `POST /graphql takes one of: ${accepted}.`, { accept: accepted }))
    },
    onSubscribe({ args }) {
      // Over WebSocket the gateway formats (and counts) what it sends; only HTTP event streams are left here.
      if (args.contextValue.connectionId) return
      return {
        onSubscribeResult: () => ({
          onNext({ result, setResult }) {
            if (result.errors?.length) setResult({ ...result, errors: toClientErrors(result.errors, 'http', count) })
          },
        }),
      }
    },
    onResultProcess({ result, setResult, resultProcessor, setResultProcessor, acceptableMediaTypes }) {
      if (!resultProcessor) {
        // Yoga would answer 406 with an empty body; the client still learns why, in JSON (and only this error counts).
        count('BAD_USER_INPUT')
        const offered = acceptableMediaTypes.join(', ')
        setResultProcessor(
          (_result, fetchAPI) => jsonError(fetchAPI, 406, `The Accept header allows none of: ${offered}.`, { accept: offered }),
          'application/json',
        )
        return
      }
      if (isAsyncIterable(result)) return
      const single = (r: ExecutionResult) => (r.errors?.length ? { ...r, errors: toClientErrors(r.errors, 'http', count) } : r)
      setResult(Array.isArray(result) ? result.map(single) : single(result as ExecutionResult))
    },
  }
}
