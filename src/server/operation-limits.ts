// Kept while src/delivery/ws-gateway.ts (being split on another branch) still imports the limits
// from here; remove once it imports src/contract/operation-limits.ts itself.
export { OPERATION_LIMITS } from '../contract/operation-limits.ts'
