// What an agent publishes besides its transcript, bounded to the contract (v1.4): the options of
// a permission request, its plan, its current mode and its models (from the `session/new` or
// `session/load` response and later updates). Pure: no IO.
import { truncateUtf8 } from '../summary/bounds.ts'

export const MAX_PERMISSION_OPTIONS = 8
export const OPTION_TEXT_MAX_BYTES = 256
export const MAX_PLAN_ENTRIES = 64
export const PLAN_CONTENT_MAX_BYTES = 1024
const MAX_MODELS = 64
const MODEL_TEXT_MAX_BYTES = 256

export const PERMISSION_OPTION_KINDS = ['allow_once', 'allow_always', 'reject_once', 'reject_always'] as const
export type PermissionOptionKind = (typeof PERMISSION_OPTION_KINDS)[number]

export interface PermissionOption {
  id: string
  name: string
  kind: PermissionOptionKind
}

/**
 * The agent's options in its order, at most 8. An option whose id is over the bound or whose
 * kind ACP does not define is left out: a cut id could not be handed back to the agent, and
 * nobody could tell what an unknown kind would do.
 */
export function permissionOptions(options: readonly { optionId?: unknown; name?: unknown; kind?: unknown }[]): PermissionOption[] {
  const kept: PermissionOption[] = []
  for (const option of options) {
    if (typeof option?.optionId !== 'string' || option.optionId.length === 0) continue
    if (Buffer.byteLength(option.optionId, 'utf8') > OPTION_TEXT_MAX_BYTES) continue
    if (!PERMISSION_OPTION_KINDS.includes(option.kind as PermissionOptionKind)) continue
    const name = typeof option.name === 'string' && option.name.length > 0 ? option.name : option.optionId
    kept.push({ id: option.optionId, name: truncateUtf8(name, OPTION_TEXT_MAX_BYTES), kind: option.kind as PermissionOptionKind })
    if (kept.length === MAX_PERMISSION_OPTIONS) break
  }
  return kept
}

/** The stored options of a permission request's metadata; anything malformed is left out. */
export function storedPermissionOptions(metadata: Record<string, unknown>): PermissionOption[] {
  const options = metadata.options
  if (!Array.isArray(options)) return []
  return options.filter(
    (o): o is PermissionOption =>
      typeof o?.id === 'string' && typeof o?.name === 'string' && PERMISSION_OPTION_KINDS.includes(o?.kind as PermissionOptionKind),
  )
}

/** How the request reads once the user chose an option: a reject option rejects, any other approves. */
export function answeredStatus(option: PermissionOption): 'APPROVED' | 'REJECTED' {
  return option.kind.startsWith('reject') ? 'REJECTED' : 'APPROVED'
}

const PRIORITIES = new Set(['high', 'medium', 'low'])
const PLAN_STATUSES = new Set(['pending', 'in_progress', 'completed'])

export interface PlanEntry {
  content: string
  priority: 'high' | 'medium' | 'low'
  status: 'pending' | 'in_progress' | 'completed'
}

/** ACP plan entries, whole plan, at most 64, each content at most 1 KiB; an entry of an unknown priority or status is left out. */
export function boundedPlan(entries: readonly { content?: unknown; priority?: unknown; status?: unknown }[]): PlanEntry[] {
  return entries
    .filter((e) => typeof e?.content === 'string' && PRIORITIES.has(e.priority as string) && PLAN_STATUSES.has(e.status as string))
    .slice(0, MAX_PLAN_ENTRIES)
    .map((e) => ({
      content: truncateUtf8(e.content as string, PLAN_CONTENT_MAX_BYTES),
      priority: e.priority as PlanEntry['priority'],
      status: e.status as PlanEntry['status'],
    }))
}

export function storedPlan(json: string): PlanEntry[] {
  try {
    const value = JSON.parse(json) as unknown
    return Array.isArray(value) ? boundedPlan(value as PlanEntry[]) : []
  } catch {
    return []
  }
}

export interface ModelChoice {
  currentModelId: string | null
  availableModels: { id: string; name: string }[]
}

/**
 * The models an agent offers, from what it sends: ACP's `models` (SessionModelState:
 * currentModelId, availableModels of {modelId, name}) or a `config_option_update`/`configOptions`
 * select of category "model". Undefined when it sent neither.
 */
export function modelChoice(source: { models?: unknown; configOptions?: unknown }): ModelChoice | undefined {
  const models = source.models as { currentModelId?: unknown; availableModels?: unknown } | null | undefined
  if (models && typeof models === 'object' && Array.isArray(models.availableModels)) {
    return boundedModels(
      models.currentModelId,
      (models.availableModels as { modelId?: unknown; name?: unknown }[]).map((m) => ({ id: m?.modelId, name: m?.name })),
    )
  }
  if (!Array.isArray(source.configOptions)) return undefined
  const select = (source.configOptions as { category?: unknown; type?: unknown; currentValue?: unknown; options?: unknown }[]).find(
    (o) => o?.category === 'model' && o.type === 'select',
  )
  if (!select || !Array.isArray(select.options)) return undefined
  return boundedModels(
    select.currentValue,
    // A select's options are either flat or grouped ({ group, options }).
    (select.options as { value?: unknown; name?: unknown; options?: unknown }[])
      .flatMap((o) => (Array.isArray(o?.options) ? (o.options as { value?: unknown; name?: unknown }[]) : [o]))
      .map((o) => ({ id: o?.value, name: o?.name })),
  )
}

function boundedModels(current: unknown, options: { id: unknown; name: unknown }[]): ModelChoice {
  return {
    currentModelId: typeof current === 'string' ? truncateUtf8(current, MODEL_TEXT_MAX_BYTES) : null,
    availableModels: options
      .filter((o): o is { id: string; name: unknown } => typeof o.id === 'string' && Buffer.byteLength(o.id, 'utf8') <= MODEL_TEXT_MAX_BYTES)
      .slice(0, MAX_MODELS)
      .map((o) => ({ id: o.id, name: truncateUtf8(typeof o.name === 'string' ? o.name : o.id, MODEL_TEXT_MAX_BYTES) })),
  }
}

/** The current mode id of a `session/new`/`session/load` response's `modes`; undefined when the agent has none. */
export function currentModeId(source: { modes?: unknown }): string | undefined {
  const modes = source.modes as { currentModeId?: unknown } | null | undefined
  return typeof modes?.currentModeId === 'string' ? truncateUtf8(modes.currentModeId, MODEL_TEXT_MAX_BYTES) : undefined
}
