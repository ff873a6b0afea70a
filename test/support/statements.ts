/**
 * The caller's token, user and membership reads (access/access-control.ts). They are kept for 5 s
 * by the clock, so whether one request reads them again depends on how long the test took, not
 * on the code path it measures: statement-count tests count them apart.
 */
export const ACCESS_READ = /FROM [^ ]*[`"](ApiToken|User|Membership)[`"] /

/** The statements that are not access reads. */
export const withoutAccessReads = (statements: readonly string[]) => statements.filter((sql) => !ACCESS_READ.test(sql))
