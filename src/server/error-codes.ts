// Kept while src/delivery/ws-gateway.ts (being split on another branch) still imports these from
// here; remove once it imports src/contract/client-errors.ts itself.
export { socketErrors, socketResult } from '../contract/client-errors.ts'
