import type { Plugin } from 'graphql-yoga'
import {
  GraphQLError,
  Kind,
  TypeInfo,
  validate,
  visit,
  visitWithTypeInfo,
  type ArgumentNode,
  type DocumentNode,
  type GraphQLSchema,
  type ValidationContext,
} from 'graphql'
import { maxAliasesPlugin } from '@escape.tech/graphql-armor-max-aliases'
import { maxDirectivesPlugin } from '@escape.tech/graphql-armor-max-directives'
import { MaxTokensParserWLexer } from '@escape.tech/graphql-armor-max-tokens'
import { costLimitRule } from '@escape.tech/graphql-armor-cost-limit'
import { queryDepthRule } from './query-depth.ts'
import { OPERATION_LIMITS, type OperationLimits } from '../../contract/operation-limits.ts'
import { refuseBeforeRunning } from './refuse-before-running.ts'

/** graphql-armor words every refusal as a "Syntax Error" and sets no code; the contract promises BAD_USER_INPUT. */
function limitError(error: GraphQLError, limit: string): GraphQLError {
  return new GraphQLError(error.message.replace(/^Syntax Error: /, ''), { extensions: { code: 'BAD_USER_INPUT', limit } })
}

const reportAs =
  (limit: string) =>
  (ctx: ValidationContext | null, error: GraphQLError): void =>
    ctx?.reportError(limitError(error, limit))

/** Rejections are reported as validation errors (not thrown), so every limit over the cap is listed at once. */
const validationOptions = (limit: string) => ({ propagateOnRejection: false, onReject: [reportAs(limit)] })

/**
 * The size cap and the token limit run in the parser, so an oversized document is refused before
 * a syntax tree is built; over graphql-ws they apply too, because the gateway parses through envelop.
 */
function documentSizePlugin(limits: OperationLimits): Plugin {
  const tokenLimit = {
    n: limits.maxTokens,
    // Thrown from inside the lexer: parsing stops at the first token over the limit.
    onReject: [
      (_ctx: unknown, error: GraphQLError) => {
        throw limitError(error, 'maxTokens')
      },
    ],
  }
  return {
    onParse({ setParseFn }) {
      setParseFn((source, options) => {
        const text = typeof source === 'string' ? source : source.body
        if (Buffer.byteLength(text, 'utf8') > limits.maxDocumentBytes)
          throw new GraphQLError(`Document larger than ${limits.maxDocumentBytes} bytes.`, {
            extensions: { code: 'BAD_USER_INPUT', limit: 'maxDocumentBytes' },
          })
        return new MaxTokensParserWLexer(source, { ...options, ...tokenLimit }).parseDocument()
      })
    },
  }
}

/**
 * Yoga's own body limit (maxRequestBodySize, on a Content-Length and while streaming a chunked
 * body) answers 413 with the code REQUEST_ENTITY_TOO_LARGE, which the contract does not list.
 */
function requestBodyLimitCodePlugin(limits: OperationLimits): Plugin {
  // By status too: a plugin earlier in the list may already have mapped the code to the contract's.
  const tooLarge = (error: { extensions?: Record<string, unknown> }) =>
    error.extensions?.code === 'REQUEST_ENTITY_TOO_LARGE' || (error.extensions?.http as { status?: number } | undefined)?.status === 413
  return {
    onResultProcess({ result, setResult }) {
      if (Array.isArray(result) || !('errors' in result) || !result.errors?.some(tooLarge)) return
      setResult({
        errors: [
          new GraphQLError(`Request body larger than ${limits.maxRequestBodyBytes} bytes.`, {
            extensions: { code: 'BAD_USER_INPUT', limit: 'maxRequestBodyBytes', http: { status: 413 } },
          }),
        ],
      })
    },
  }
}

/** armor's max-depth plugin skips every `__schema` selection; this count covers every document (query-depth.ts). */
function queryDepthPlugin(limits: OperationLimits): Plugin {
  const rule = queryDepthRule(limits.maxDepth, reportAs('maxDepth'))
  return {
    onValidate({ addValidationRule }) {
      addValidationRule(rule)
    },
  }
}

const PAGE_ARGUMENTS = new Set(['first', 'last'])

/**
 * graphql-armor's cost rule multiplies a list by its `first`/`last` only when that is a literal; a
 * client passing `$first: 500`, or omitting it (schema default 100), would be costed as one item.
 * This rewrites every page-size argument to its effective literal (variable value, else schema default).
 */
function withEffectivePageSizes(schema: GraphQLSchema, document: DocumentNode, variables: Record<string, unknown>): DocumentNode {
  const typeInfo = new TypeInfo(schema)
  return visit(
    document,
    visitWithTypeInfo(typeInfo, {
      Field(node) {
        const definition = typeInfo.getFieldDef()
        const page = definition?.args.find((a) => PAGE_ARGUMENTS.has(a.name))
        if (!page) return undefined
        const given = node.arguments?.find((a) => a.name.value === page.name)?.value
        const value =
          given?.kind === Kind.INT ? Number(given.value) : given?.kind === Kind.VARIABLE ? variables[given.name.value] : undefined
        const size = typeof value === 'number' && Number.isFinite(value) ? value : typeof page.defaultValue === 'number' ? page.defaultValue : 1
        const argument: ArgumentNode = {
          kind: Kind.ARGUMENT,
          name: { kind: Kind.NAME, value: page.name },
          value: { kind: Kind.INT, value: String(Math.max(1, Math.ceil(size))) },
        }
        // The cost rule reads only the first page argument it meets, so it goes first.
        return { ...node, arguments: [argument, ...(node.arguments ?? []).filter((a) => a.name.value !== page.name)] }
      },
    }),
  )
}

/** Page-size combinations kept per document: a client paging with many sizes is costed again, not held. */
const MAX_COSTED_PAGE_SIZES = 32

/** The variables a document passes as page sizes (what its cost depends on beside its text). */
function pageSizeVariables(schema: GraphQLSchema, document: DocumentNode): string[] {
  const typeInfo = new TypeInfo(schema)
  const names = new Set<string>()
  visit(
    document,
    visitWithTypeInfo(typeInfo, {
      Field(node) {
        const page = typeInfo.getFieldDef()?.args.find((a) => PAGE_ARGUMENTS.has(a.name))
        const given = page && node.arguments?.find((a) => a.name.value === page.name)?.value
        if (given?.kind === Kind.VARIABLE) names.add(given.name.value)
      },
    }),
  )
  return [...names]
}

/**
 * The cost limit needs the variables, which validation (cached by document text in Yoga) never
 * sees, so it runs when an operation is about to execute or subscribe: still before any resolver.
 */
function costLimitPlugin(limits: OperationLimits): Plugin {
  // armor leaves `__schema` out by default; the standard introspection query costs about 87,500.
  const rule = costLimitRule({ maxCost: limits.maxCost, ignoreIntrospection: false, ...validationOptions('maxCost') })
  // The cost of a document depends on nothing but its page sizes: costed once per document (Yoga's
  // parse cache hands out one DocumentNode per text) and page-size variables, not once per operation.
  const costed = new WeakMap<DocumentNode, { pageVariables: string[]; byPageSizes: Map<string, readonly GraphQLError[]> }>()
  const refusal = (args: { schema: GraphQLSchema; document: DocumentNode; variableValues?: Record<string, unknown> | null }) => {
    const variables = args.variableValues ?? {}
    let entry = costed.get(args.document)
    if (!entry) costed.set(args.document, (entry = { pageVariables: pageSizeVariables(args.schema, args.document), byPageSizes: new Map() }))
    const key = JSON.stringify(entry.pageVariables.map((name) => variables[name] ?? null))
    let errors = entry.byPageSizes.get(key)
    if (!errors) {
      errors = validate(args.schema, withEffectivePageSizes(args.schema, args.document, variables), [rule])
      if (entry.byPageSizes.size >= MAX_COSTED_PAGE_SIZES) entry.byPageSizes.delete(entry.byPageSizes.keys().next().value!)
      entry.byPageSizes.set(key, errors)
    }
    return errors.length > 0 ? { errors } : undefined
  }
  return refuseBeforeRunning(refusal)
}

/**
 * The request and document limits, in the order they can refuse: body size (HTTP, with Yoga's
 * maxRequestBodySize set to maxRequestBodyBytes), size and tokens (parse), shape (validate), cost (execute).
 */
export function operationLimitPlugins(limits: OperationLimits = OPERATION_LIMITS): Plugin[] {
  return [
    requestBodyLimitCodePlugin(limits),
    documentSizePlugin(limits),
    queryDepthPlugin(limits),
    maxAliasesPlugin({ n: limits.maxAliases, ...validationOptions('maxAliases') }),
    maxDirectivesPlugin({ n: limits.maxDirectives, ...validationOptions('maxDirectives') }),
    costLimitPlugin(limits),
  ]
}
