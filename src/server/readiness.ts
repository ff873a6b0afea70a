/**
 * /readyz turns 200 only after startup recovery: the flag starts down and the boot sequence
 * raises it once every step that must precede traffic has finished.
 */
export class Readiness {
  #ready = false
  #pending = new Set<string>()

  /** Holds readiness down until the returned function is called. */
  hold(reason: string): () => void {
    this.#pending.add(reason)
    return () => this.#pending.delete(reason)
  }

  markReady(): void {
    this.#ready = true
  }

  get ready(): boolean {
    return this.#ready && this.#pending.size === 0
  }

  get waitingFor(): string[] {
    return this.#ready ? [...this.#pending] : ['startup', ...this.#pending]
  }
}
