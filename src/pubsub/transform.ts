// The old name of mapAsyncIterator, kept while src/schema/types/session-events.ts (being split on
// another branch) still imports it from here; remove once that import moves to util/async-iterators.ts.
export { mapAsyncIterator as transformIterator } from '../util/async-iterators.ts'
