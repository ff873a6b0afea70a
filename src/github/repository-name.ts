// GitHub's rules for a repository full name: owner (1–39 letters, digits, hyphens, not starting
// with a hyphen) / name (1–100 letters, digits, '.', '_', '-', but not '.' or '..').
const FULL_NAME = /^[A-Za-z0-9][A-Za-z0-9-]{0,38}\/[A-Za-z0-9._-]{1,100}$/

/** The trimmed full name, or undefined when it is not of the form owner/name. */
export function parseRepositoryFullName(value: string): string | undefined {
  const name = value.trim()
  if (!FULL_NAME.test(name)) return undefined
  const repo = name.slice(name.indexOf('/') + 1)
  return repo === '.' || repo === '..' ? undefined : name
}
