/**
 * Claims a notice for this tab, once across every tab of the browser: an IndexedDB `add` of its key
 * succeeds in exactly one tab (the database serialises the transactions, where a read-then-write of
 * localStorage could let two tabs both see the key free). Claims older than a week are dropped.
 */
const DB = 'task-switcher-notices'
const STORE = 'claims'
const KEEP_MS = 7 * 24 * 3_600_000

let opened: Promise<IDBDatabase> | null = null

function database(): Promise<IDBDatabase> {
  opened ??= new Promise((resolve, reject) => {
    const request = indexedDB.open(DB, 1)
    request.onupgradeneeded = () => request.result.createObjectStore(STORE, { keyPath: 'key' }).createIndex('at', 'at')
    request.onsuccess = () => {
      resolve(request.result)
      prune(request.result)
    }
    request.onerror = () => reject(request.error ?? new Error('IndexedDB did not open'))
  })
  return opened
}

function prune(db: IDBDatabase) {
  const index = db.transaction(STORE, 'readwrite').objectStore(STORE).index('at')
  const cursor = index.openCursor(IDBKeyRange.upperBound(Date.now() - KEEP_MS))
  cursor.onsuccess = () => {
    if (!cursor.result) return
    cursor.result.delete()
    cursor.result.continue()
  }
}

/** True in the one tab whose claim was first; false in every other (and when storage fails: no duplicate is shown). */
export async function claimNotice(key: string): Promise<boolean> {
  try {
    const db = await database()
    return await new Promise<boolean>((resolve) => {
      const transaction = db.transaction(STORE, 'readwrite')
      const request = transaction.objectStore(STORE).add({ key, at: Date.now() })
      request.onerror = (e) => {
        e.preventDefault() // a ConstraintError (claimed elsewhere) is an answer, not a failure
        resolve(false)
      }
      transaction.oncomplete = () => resolve(true)
      transaction.onabort = () => resolve(false)
    })
  } catch {
    return false
  }
}
