/**
 * A bounded map whose entries expire `ttlMs` after they were set, on a monotonic clock (injected
 * in tests). Full, it drops its oldest entry: a cache of facts that are cheap to read again.
 */
export class ExpiringMap<K, V> {
  readonly #entries = new Map<K, { value: V; until: number }>()
  readonly #ttlMs: number
  readonly #max: number
  readonly #now: () => number

  constructor(options: { ttlMs: number; max: number; now?: () => number }) {
    this.#ttlMs = options.ttlMs
    this.#max = options.max
    this.#now = options.now ?? (() => performance.now())
  }

  get size(): number {
    return this.#entries.size
  }

  /** The value set less than `ttlMs` ago; an expired entry is dropped. */
  get(key: K): V | undefined {
    const entry = this.#entries.get(key)
    if (!entry) return undefined
    if (entry.until > this.#now()) return entry.value
    this.#entries.delete(key)
    return undefined
  }

  set(key: K, value: V): void {
    this.#entries.delete(key)
    if (this.#entries.size >= this.#max) this.#entries.delete(this.#entries.keys().next().value!)
    this.#entries.set(key, { value, until: this.#now() + this.#ttlMs })
  }

  delete(key: K): void {
    this.#entries.delete(key)
  }

  /** Drops every entry whose value matches (expired or not). */
  deleteWhere(matches: (value: V, key: K) => boolean): void {
    for (const [key, entry] of this.#entries) if (matches(entry.value, key)) this.#entries.delete(key)
  }

  clear(): void {
    this.#entries.clear()
  }
}
