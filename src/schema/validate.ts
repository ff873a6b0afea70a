import { badInput } from '../errors.ts'

/** Trims and bounds a human-entered string; BAD_USER_INPUT names the field. */
export function boundedText(field: string, value: string, { min = 1, max }: { min?: number; max: number }): string {
  const trimmed = value.trim()
  if (trimmed.length < min) throw badInput(`${field} must not be empty.`, field)
  if (trimmed.length > max) throw badInput(`${field} must be at most ${max} characters.`, field)
  return trimmed
}

export function optionalText(field: string, value: string | null | undefined, max: number): string | null | undefined {
  if (value === null || value === undefined) return value
  if (value.length > max) throw badInput(`${field} must be at most ${max} characters.`, field)
  return value
}

export function intInRange(field: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max)
    throw badInput(`${field} must be an integer from ${min} to ${max}.`, field)
  return value
}
