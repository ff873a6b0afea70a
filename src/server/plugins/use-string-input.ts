import { BREAK, GraphQLError, Kind, visit, type ASTNode, type DocumentNode, type ValueNode } from 'graphql'
import type { Plugin } from 'graphql-yoga'
import { refuseBeforeRunning } from './refuse-before-running.ts'

/**
 * A lone UTF-16 surrogate: a high one not followed by a low one, or a low one not preceded by a
 * high one. Without the `u` flag the pattern looks at UTF-16 code units, which is what one is.
 */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/**
 * Neither a lone surrogate nor U+0000 can be stored: PostgreSQL refuses NUL in text, and both
 * databases' drivers fail on a string that is not well-formed Unicode, which used to surface as
 * INTERNAL_SERVER_ERROR from inside a resolver.
 */
export const hasUnstorableCharacters = (value: string): boolean => value.includes('\u0000') || LONE_SURROGATE.test(value)

const WHAT = 'contains a lone UTF-16 surrogate or a NUL character (U+0000); strings must be well-formed Unicode without NUL'

/** Where in a literal value the first unstorable string is (`path` itself for the value), or undefined. */
function unstorableInLiteral(value: ValueNode, path: string): string | undefined {
  switch (value.kind) {
    case Kind.STRING:
      return hasUnstorableCharacters(value.value) ? path : undefined
    case Kind.LIST:
      for (const [index, item] of value.values.entries()) {
        const found = unstorableInLiteral(item, `${path}[${index}]`)
        if (found !== undefined) return found
      }
      return undefined
    case Kind.OBJECT:
      for (const field of value.fields) {
        const found = unstorableInLiteral(field.value, `${path}.${field.name.value}`)
        if (found !== undefined) return found
      }
      return undefined
    default:
      return undefined
  }
}

/**
 * Where in a variable's JSON value the first unstorable string (or object key) is. Iterative: a
 * 2 MiB body can nest arrays a million deep, which recursion would answer with a stack overflow.
 */
function unstorableInJson(root: unknown, rootPath: string): string | undefined {
  const pending: [unknown, string][] = [[root, rootPath]]
  while (pending.length > 0) {
    const [value, path] = pending.pop()!
    if (typeof value === 'string') {
      if (hasUnstorableCharacters(value)) return path
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) pending.push([value[i], `${path}[${i}]`])
    } else if (value !== null && typeof value === 'object') {
      for (const [key, item] of Object.entries(value).reverse()) {
        if (hasUnstorableCharacters(key)) return path
        pending.push([item, `${path}.${key}`])
      }
    }
  }
  return undefined
}

const refusal = (message: string, node?: ASTNode) =>
  new GraphQLError(message, { nodes: node, extensions: { code: 'BAD_USER_INPUT', http: { status: 400 } } })

/** The field or directive an argument belongs to, for the message. */
function argumentOwner(ancestors: readonly (ASTNode | readonly ASTNode[])[]): string {
  for (let i = ancestors.length - 1; i >= 0; i--) {
    const node = ancestors[i]!
    if ('kind' in node && node.kind === Kind.FIELD) return ` of field "${node.name.value}"`
    if ('kind' in node && node.kind === Kind.DIRECTIVE) return ` of directive "@${node.name.value}"`
  }
  return ''
}

/** The first literal of the document (an argument or a variable's default) holding an unstorable string. */
function literalRefusal(document: DocumentNode): GraphQLError | undefined {
  let found: GraphQLError | undefined
  visit(document, {
    Argument(node, _key, _parent, _path, ancestors) {
      const name = node.name.value
      const at = unstorableInLiteral(node.value, name)
      if (at === undefined) return undefined
      found = refusal(`Argument "${name}"${argumentOwner(ancestors)}${at === name ? '' : ` at "${at}"`} ${WHAT}.`, node)
      return BREAK // the first one is enough to refuse the operation
    },
    VariableDefinition(node) {
      const name = `$${node.variable.name.value}`
      const at = node.defaultValue ? unstorableInLiteral(node.defaultValue, name) : undefined
      if (at === undefined) return undefined
      found = refusal(`The default value of variable "${name}"${at === name ? '' : ` at "${at}"`} ${WHAT}.`, node)
      return BREAK
    },
  })
  return found
}

/** The first variable value holding an unstorable string, named by variable and path, never quoted. */
function variableRefusal(document: DocumentNode, variables: Record<string, unknown> | null | undefined): GraphQLError | undefined {
  if (!variables || typeof variables !== 'object') return undefined
  for (const [name, value] of Object.entries(variables)) {
    const at = unstorableInJson(value, name)
    if (at === undefined) continue
    const definition = document.definitions
      .flatMap((d) => (d.kind === Kind.OPERATION_DEFINITION ? (d.variableDefinitions ?? []) : []))
      .find((v) => v.variable.name.value === name)
    return refusal(`Variable "$${name}"${at === name ? '' : ` at "${at}"`} ${WHAT}.`, definition)
  }
  return undefined
}

/**
 * One check at the schema boundary, on both transports (the WebSocket gateway runs operations
 * through the same envelop pipeline): every string an operation carries, in literals of the
 * document (arguments of any kind: ID, String, custom scalars, cursors, inside input objects and
 * lists) and in its variables, must be storable. It runs when an operation is about to execute or
 * subscribe, after parsing and validation and before any resolver, so a refused operation changes
 * nothing. The message names the argument or variable and the path, never the value.
 */
export function stringInputPlugin(): Plugin {
  // A document's literals are checked once (Yoga's parse cache hands out one DocumentNode per text).
  const literals = new WeakMap<DocumentNode, GraphQLError | null>()
  const literalRefusalOf = (document: DocumentNode) => {
    let refused = literals.get(document)
    if (refused === undefined) literals.set(document, (refused = literalRefusal(document) ?? null))
    return refused ?? undefined
  }
  const check = (args: { document: DocumentNode; variableValues?: Record<string, unknown> | null }) => {
    const error = literalRefusalOf(args.document) ?? variableRefusal(args.document, args.variableValues)
    return error ? { errors: [error] } : undefined
  }
  return refuseBeforeRunning(check)
}
