import type { ClientOptions, FormattedExecutionResult, Sink, SubscribePayload } from 'graphql-ws'
import type { GraphQLFormattedError } from 'graphql'
import { TaskClientImpl, type TaskClientOptions } from '../../packages/client/src/task-client.ts'
import type { Message, MessageAppend, SessionInfo, StatusSummary } from '../../packages/client/src/index.ts'
import type { TaskRowPayload } from '../../packages/client/src/types.ts'

/** One operation the SDK asked a fake graphql-ws client to run. */
export class FakeOperation {
  /** The SDK called the returned cleanup (graphql-ws would send `complete`). */
  unsubscribed = false
  /** The fake server ended it (answered, errored or completed). */
  ended = false
  constructor(
    readonly payload: SubscribePayload,
    private readonly sink: Sink<FormattedExecutionResult<unknown, unknown>>,
  ) {}

  get name(): string | undefined {
    return this.payload.operationName ?? undefined
  }

  get variables(): Record<string, unknown> {
    return (this.payload.variables ?? {}) as Record<string, unknown>
  }

  /** A subscription event (or a query's result before `complete`). */
  next(data: unknown) {
    this.sink.next({ data } as FormattedExecutionResult<unknown, unknown>)
  }

  /** A query/mutation answer: next + complete. */
  reply(data: unknown) {
    this.next(data)
    this.complete()
  }

  fail(code: string, message = code) {
    this.ended = true
    this.sink.error([{ message, extensions: { code } }] as GraphQLFormattedError[])
  }

  complete() {
    this.ended = true
    this.sink.complete()
  }
}

/** A fake graphql-ws client: one per socket the SDK opens. */
export class FakeSocket {
  readonly operations: FakeOperation[] = []
  disposed = false
  constructor(readonly options: ClientOptions) {}

  subscribe(payload: SubscribePayload, sink: Sink<FormattedExecutionResult<unknown, unknown>>): () => void {
    const operation = new FakeOperation(payload, sink)
    this.operations.push(operation)
    return () => {
      operation.unsubscribed = true
    }
  }

  dispose() {
    this.disposed = true
    return Promise.resolve()
  }

  /** The server acknowledged connection_init. */
  ack() {
    this.options.on?.connected?.({}, undefined, false)
  }

  /** graphql-ws's terminate(): a synthetic 4499 close, at once. */
  terminated = false
  terminate() {
    this.terminated = true
    this.close(4499, 'Terminated')
  }

  /** The keepalive ping the client sent, and the server's pong. */
  pingSent() {
    this.options.on?.ping?.(false, undefined)
  }
  pongReceived() {
    this.options.on?.pong?.(true, undefined)
  }

  /** The socket closed with this code. */
  close(code: number, reason = '') {
    this.options.on?.closed?.({ code, reason, wasClean: code === 1000 })
  }

  named(name: string): FakeOperation[] {
    return this.operations.filter((o) => o.name === name)
  }

  /** The newest operation of that name not yet answered or cancelled. */
  pending(name: string): FakeOperation {
    const found = this.named(name).filter((o) => !o.ended && !o.unsubscribed)
    const last = found.at(-1)
    if (!last) throw new Error(`no pending ${name}; asked: ${this.operations.map((o) => o.name).join(', ')}`)
    return last
  }

  /** Live subscriptions (not ended, not unsubscribed) of that name. */
  live(name: string): FakeOperation[] {
    return this.named(name).filter((o) => !o.ended && !o.unsubscribed)
  }
}

/** Timers that move only when the test says so. */
export class ManualClock {
  now = 0
  private next = 1
  private readonly timers = new Map<number, { at: number; callback: () => void }>()

  set = (callback: () => void, ms: number): unknown => {
    const id = this.next++
    this.timers.set(id, { at: this.now + ms, callback })
    return id
  }

  clear = (handle: unknown): void => {
    this.timers.delete(handle as number)
  }

  get pending(): number {
    return this.timers.size
  }

  /** Delays of the pending timers, from now. */
  get delays(): number[] {
    return [...this.timers.values()].map((t) => t.at - this.now).sort((a, b) => a - b)
  }

  /** Moves time forward, running every timer due (in order), settling promises after each. */
  async advance(ms: number): Promise<void> {
    const until = this.now + ms
    await settle()
    for (;;) {
      const due = [...this.timers.entries()].filter(([, t]) => t.at <= until).sort((a, b) => a[1].at - b[1].at)[0]
      if (!due) break
      this.timers.delete(due[0])
      this.now = due[1].at
      due[1].callback()
      await settle()
    }
    this.now = until
    await settle()
  }
}

/** Lets every pending promise continuation run. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 50; i++) await Promise.resolve()
}

export interface Harness {
  client: TaskClientImpl
  clock: ManualClock
  sockets: FakeSocket[]
  /** The socket of the current connection. */
  readonly socket: FakeSocket
  /** Runs the frames the client requested. */
  runFrames(): void
  readonly framesRequested: number
  diagnostics: unknown[]
}

/** A client on fake sockets, a manual clock and an injected frame. The first socket is acknowledged. */
export function harness(options: Partial<TaskClientOptions> & { ack?: boolean } = {}): Harness {
  const clock = new ManualClock()
  const sockets: FakeSocket[] = []
  const frames: (() => void)[] = []
  let framesRequested = 0
  const diagnostics: unknown[] = []
  let ids = 0
  const client = new TaskClientImpl({
    url: 'http://example.test/graphql',
    token: 'secret',
    createWsClient: (o) => {
      const socket = new FakeSocket(o)
      sockets.push(socket)
      return socket
    },
    setTimer: clock.set,
    clearTimer: clock.clear,
    random: () => 0.5,
    requestFrame: (flush) => {
      framesRequested++
      frames.push(flush)
    },
    onEvent: (e) => diagnostics.push(e),
    generateId: () => `web-id-${++ids}`,
    ...options,
  })
  if (options.ack !== false) sockets[0]!.ack()
  return {
    client,
    clock,
    sockets,
    get socket() {
      return sockets.at(-1)!
    },
    runFrames() {
      for (const f of frames.splice(0)) f()
    },
    get framesRequested() {
      return framesRequested
    },
    diagnostics,
  }
}

// ---- payload builders -----------------------------------------------------------------------

export function summary(taskId: string, revision: number, extra: Partial<StatusSummary> = {}): StatusSummary {
  return {
    id: taskId,
    taskId,
    revision,
    updatedAt: `2026-01-01T00:00:${String(revision).padStart(2, '0')}.000Z`,
    lastActivityAt: null,
    primarySession: null,
    foregroundActivity: null,
    activeSubagentCount: 0,
    pendingAction: null,
    activeError: null,
    git: null,
    pullRequest: null,
    waitingSince: null,
    queuedPromptCount: 0,
    interruption: null,
    ...extra,
  }
}

export function taskRow(id: string, title: string, statusSummary: StatusSummary | null): TaskRowPayload {
  return { id, title, workflowStepId: 'step-1', createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z', statusSummary }
}

export function message(id: string, sessionId: string, version: number, content = `v${version}`, extra: Partial<Message> = {}): Message {
  return {
    id,
    sessionId,
    taskId: 'task-1',
    turnId: 'turn-1',
    author: 'AGENT',
    kind: 'MESSAGE',
    content,
    status: 'IN_PROGRESS',
    pendingId: null,
    version,
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:00.000Z',
    permissionOptions: [],
    toolCall: null,
    ...extra,
  }
}

export function sessionInfo(id: string, extra: Partial<SessionInfo> = {}): SessionInfo {
  return {
    id,
    taskId: 'task-1',
    agentProfile: 'mock',
    state: 'WAITING_FOR_INPUT',
    isPrimary: true,
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:00.000Z',
    error: null,
    models: { currentModelId: null, available: [] },
    git: [],
    plan: [],
    currentModeId: null,
    ...extra,
  }
}

/** A boot answer of one page. */
export function bootAnswer(feedCursor: string, tasks: TaskRowPayload[], next?: string) {
  return {
    boot: {
      feedCursor,
      tasks: { edges: tasks.map((node) => ({ node })), pageInfo: { hasNextPage: Boolean(next), endCursor: next ?? null } },
    },
  }
}

/** Opens a workspace on the harness and answers its boot. */
export async function openBooted(h: Harness, workspaceId: string, feedCursor: string, tasks: TaskRowPayload[]) {
  const opened = h.client.openWorkspace(workspaceId)
  await settle()
  h.socket.pending('ClientBoot').reply(bootAnswer(feedCursor, tasks))
  await opened
  return h.socket.pending('ClientWorkspaceEvents')
}

export const feedEvent = {
  summary: (cursor: string, s: StatusSummary) => ({
    workspaceEvents: { __typename: 'TaskStatusSummaryUpdated', cursor, taskId: s.taskId, workspaceId: 'ws-1', summary: s },
  }),
  upserted: (cursor: string, task: TaskRowPayload) => ({ workspaceEvents: { __typename: 'TaskUpserted', cursor, task } }),
  deleted: (cursor: string, taskId: string) => ({ workspaceEvents: { __typename: 'TaskDeleted', cursor, taskId, workspaceId: 'ws-1' } }),
  resync: (reason: string, cursor: string | null = null) => ({ workspaceEvents: { __typename: 'WorkspaceResync', cursor, workspaceId: 'ws-1', reason } }),
}

export const sessionEvent = {
  joined: (sessionId: string, messages: Message[] | null, session = sessionInfo(sessionId)) => ({
    sessionEvents: { __typename: 'SessionJoined', sessionId, snapshot: messages ? { session, messages } : null },
  }),
  added: (m: Message) => ({ sessionEvents: { __typename: 'MessageAdded', message: m } }),
  /** A MessageUpdated as the SDK selects it (StreamedMessageFields): the message without its content, options and tool call detail, and the append (null: a gap). */
  updated: (m: Message, append: MessageAppend | null = null) => {
    const { content: _content, permissionOptions: _options, toolCall: _toolCall, ...message } = m
    return { sessionEvents: { __typename: 'MessageUpdated', message, append } }
  },
  deleted: (sessionId: string, messageId: string) => ({ sessionEvents: { __typename: 'MessageDeleted', sessionId, messageId } }),
  turnCompleted: (sessionId: string) => ({
    sessionEvents: { __typename: 'TurnCompleted', turn: { id: 'turn-1', sessionId, interrupted: false, stopReason: 'end_turn' } },
  }),
  stateChanged: (session: SessionInfo) => ({ sessionEvents: { __typename: 'SessionStateChanged', session } }),
  resync: (sessionId: string) => ({ sessionEvents: { __typename: 'SessionResync', sessionId, reason: 'gap' } }),
}
