// (v1.4) What a real agent sends besides its transcript, on the types that carry it: a permission
// request's options and a tool call's detail on Message, the plan and current mode on Session.
// Everything here is bounded where the agent layer stores it (agents/tool-call-detail.ts,
// agents/agent-publications.ts); the resolvers only read it back.
import { builder } from '../builder.ts'
import { parseMetadata, storedToolCallDetail, type ToolCallDetail, type ToolCallDiff, type ToolCallLocation } from '../../agents/tool-call-detail.ts'
import { storedPermissionOptions, storedPlan, type PermissionOption, type PlanEntry } from '../../agents/agent-publications.ts'
import { MessageRef, SessionRef } from './session.ts'

const upper = <T extends string>(value: T) => value.toUpperCase() as Uppercase<T>

const PermissionOptionKindEnum = builder.enumType('PermissionOptionKind', {
  description: "(v1.4) ACP's permission option kinds.",
  values: ['ALLOW_ONCE', 'ALLOW_ALWAYS', 'REJECT_ONCE', 'REJECT_ALWAYS'] as const,
})

const PermissionOptionRef = builder.objectRef<PermissionOption>('PermissionOption').implement({
  description: '(v1.4) One choice an agent offers on a permission request, exactly as the agent sent it.',
  fields: (t) => ({
    id: t.exposeString('id', { description: 'Pass it to respondToPermission(optionId:). At most 256 UTF-8 bytes.' }),
    name: t.exposeString('name', { description: 'The agent\'s label ("Allow once", "Always allow edits"…). At most 256 UTF-8 bytes.' }),
    kind: t.field({ type: PermissionOptionKindEnum, resolve: (o) => upper(o.kind) }),
  }),
})

const ToolCallLocationRef = builder.objectRef<ToolCallLocation>('ToolCallLocation').implement({
  description: '(v1.4)',
  fields: (t) => ({
    path: t.exposeString('path'),
    line: t.exposeInt('line', { nullable: true }),
  }),
})

const ToolCallDiffRef = builder.objectRef<ToolCallDiff>('ToolCallDiff').implement({
  description: '(v1.4) One edit of one file. oldText is null for a new file.',
  fields: (t) => ({
    path: t.exposeString('path'),
    oldText: t.exposeString('oldText', { nullable: true }),
    newText: t.exposeString('newText'),
  }),
})

const ToolCallDetailRef = builder.objectRef<ToolCallDetail>('ToolCallDetail').implement({
  description: '(v1.4) What a tool call does or did, as the agent described it; bounded, never the whole file system.',
  fields: (t) => ({
    kind: t.exposeString('kind', {
      nullable: true,
      description: 'ACP tool kind as sent: read, edit, delete, move, search, execute, think, fetch, switch_mode or other.',
    }),
    locations: t.expose('locations', { type: [ToolCallLocationRef], description: 'Files the call touches, at most 32.' }),
    diffs: t.expose('diffs', {
      type: [ToolCallDiffRef],
      description: 'Proposed or applied edits, at most 16; oldText and newText together at most 64 KiB of UTF-8 over all diffs of the call.',
    }),
    rawInput: t.exposeString('rawInput', {
      nullable: true,
      description: "The tool's input as the agent sent it, JSON text, at most 16 KiB of UTF-8; null when none.",
    }),
    truncated: t.exposeBoolean('truncated', { description: 'True when any list or text above was cut to its bound.' }),
  }),
})

const PlanEntryPriorityEnum = builder.enumType('PlanEntryPriority', { description: '(v1.4)', values: ['HIGH', 'MEDIUM', 'LOW'] as const })
const PlanEntryStatusEnum = builder.enumType('PlanEntryStatus', {
  description: '(v1.4)',
  values: ['PENDING', 'IN_PROGRESS', 'COMPLETED'] as const,
})

const PlanEntryRef = builder.objectRef<PlanEntry>('PlanEntry').implement({
  description: "(v1.4) One entry of the agent's plan (ACP plan updates replace the whole plan).",
  fields: (t) => ({
    content: t.exposeString('content', { description: 'At most 1 KiB of UTF-8.' }),
    priority: t.field({ type: PlanEntryPriorityEnum, resolve: (e) => upper(e.priority) }),
    status: t.field({ type: PlanEntryStatusEnum, resolve: (e) => upper(e.status) }),
  }),
})

builder.objectFields(MessageRef, (t) => ({
  permissionOptions: t.field({
    type: [PermissionOptionRef],
    description: "(v1.4) On PERMISSION_REQUEST messages: the agent's options, in the agent's order (at most 8); empty on every other kind.",
    resolve: (m) => (m.kind === 'PERMISSION_REQUEST' ? storedPermissionOptions(parseMetadata(m.metadata)) : []),
  }),
  toolCall: t.field({
    type: ToolCallDetailRef,
    nullable: true,
    description:
      '(v1.4) On TOOL_CALL and PERMISSION_REQUEST messages: what the tool does (for a permission request, what the user is asked to allow). Null on other kinds and when the agent sent no detail.',
    resolve: (m) => (m.kind === 'TOOL_CALL' || m.kind === 'PERMISSION_REQUEST' ? storedToolCallDetail(parseMetadata(m.metadata)) : null),
  }),
}))

builder.objectFields(SessionRef, (t) => ({
  plan: t.field({
    type: [PlanEntryRef],
    description: "(v1.4) The agent's latest plan, at most 64 entries; empty when it published none.",
    resolve: (s) => storedPlan(s.plan),
  }),
  currentModeId: t.exposeString('currentModeId', {
    nullable: true,
    description: "(v1.4) The agent's current mode id (ACP session modes), null when the agent has no modes.",
  }),
}))
