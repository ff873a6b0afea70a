import { writeFileSync } from 'node:fs'
import { printedSchema } from '../src/schema/schema.ts'

writeFileSync(new URL('../schema.graphql', import.meta.url), printedSchema())
console.info('wrote schema.graphql')
