import type { ActionError } from './use-action.ts'

/** A refusal, next to the form that caused it (announced to screen readers as it appears). */
export function FormError(props: { error: ActionError | null }) {
  if (!props.error) return null
  return (
    <p className="error-text form-error" role="alert" data-error-code={props.error.code}>
      {props.error.message}
    </p>
  )
}
