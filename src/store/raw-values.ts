// Values of raw queries as each provider returns them: SQLite gives booleans as 0/1 and dates
// as text or epoch numbers, PostgreSQL gives booleans and Dates.
export const rawBool = (v: unknown) => v === true || v === 1 || v === 1n || v === '1' || v === 't'
export const rawDate = (v: string | number | Date) => (v instanceof Date ? v : new Date(v))
export const rawInt = (v: number | bigint) => Number(v)
