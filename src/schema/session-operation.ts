import { SessionOperationError } from '../agents/session-operation-error.ts'
import { clientError } from '../errors.ts'

/** Session command failures are the client's to fix (or, UNAVAILABLE, to retry): they keep their code. */
export async function sessionOperation<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return await operation()
  } catch (error) {
    if (error instanceof SessionOperationError) throw clientError(error.code, error.message, error.details)
    throw error
  }
}
