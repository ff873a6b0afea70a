import type { Logger } from '../observability/logger.ts'
import type { Metrics } from '../observability/metrics.ts'
import type { StageContext } from '../observability/tracing.ts'
import type { PubSub } from '../pubsub/pubsub.ts'
import { toStoredSummary, type SummaryRow } from '../store/summaries.ts'
import { deriveSummary } from '../summary/derive.ts'
import { attentionOrder } from '../summary/attention.ts'
import { InvalidSummaryError, semanticJson, validateSummary } from '../summary/semantic.ts'
import type { StoredSummary, SummaryPayload } from '../summary/types.ts'

/** A derived summary as it is stored: its canonical JSON and the attention columns lists order by. */
export type Derived = { taskId: string; workspaceId: string; payload: SummaryPayload; json: string; attentionRank: number; attentionKey: number }

/** What the projector's write path and read path both need: where failures are logged and metered, and where revisions are published. */
export interface SummaryOutlets {
  pubsub: PubSub
  logger: Logger
  metrics: Metrics
}

/** Derives and validates one task's summary; an invalid one is logged and metered, never stored (undefined). */
export function deriveForStorage(inputs: Parameters<typeof deriveSummary>[0], { logger, metrics }: SummaryOutlets): Derived | undefined {
  const payload = deriveSummary(inputs)
  try {
    validateSummary(payload)
  } catch (error) {
    if (!(error instanceof InvalidSummaryError)) throw error
    metrics.projectorFailures.inc({ reason: 'invalid' })
    logger.error({ taskId: inputs.task.id, reason: error.message }, 'derived an invalid summary; not stored')
    return undefined
  }
  const order = attentionOrder(payload)
  return {
    taskId: inputs.task.id,
    workspaceId: inputs.task.workspaceId,
    payload,
    json: semanticJson(payload),
    attentionRank: order.rank,
    attentionKey: order.key,
  }
}

/** Publishes a written revision as TaskStatusSummaryUpdated (at most once: a failed publish is only logged). */
export async function publishRevision(
  summary: Derived & { revision: number; updatedAt: Date; feedSequence: number },
  { pubsub, logger, metrics }: SummaryOutlets,
  trace?: StageContext,
): Promise<void> {
  metrics.projectorRevisions.inc()
  try {
    await pubsub.publish('workspace', summary.workspaceId, {
      type: 'TaskStatusSummaryUpdated',
      workspaceId: summary.workspaceId,
      taskId: summary.taskId,
      revision: summary.revision,
      updatedAt: summary.updatedAt.toISOString(),
      summary: summary.payload,
      sequence: summary.feedSequence,
    }, trace)
  } catch (error) {
    // At-most-once delivery: the stored revision is what reconnecting clients read.
    logger.warn({ err: error, taskId: summary.taskId }, 'summary publish failed')
  }
}

/** Stored rows parsed once; a row whose payload cannot be read maps to undefined (it gets repaired). */
export function parseRows(rows: readonly SummaryRow[]): Map<string, StoredSummary | undefined> {
  return new Map(
    rows.map((r) => {
      try {
        return [r.taskId, toStoredSummary(r)]
      } catch {
        return [r.taskId, undefined]
      }
    }),
  )
}

/** Each task's lastActivityAt as its stored summary has it: derivation keeps it monotonic (loadSummaryInputs). */
export function lastActivityOf(parsed: Map<string, StoredSummary | undefined>): Map<string, Date | null> {
  return new Map(
    [...parsed].map(([taskId, summary]) => {
      const at = summary?.payload.lastActivityAt
      return [taskId, at ? new Date(at) : null]
    }),
  )
}
