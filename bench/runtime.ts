/**
 * How the bench's own processes (the server, the raw ws baseline, the clients) run TypeScript.
 * `node` (default): Node's own type transform, which like `npm run build`
 * emits the code as written. `tsx` (BENCH_RUNTIME=tsx): as `npm start` runs it; esbuild's keepNames, which tsx
 * forces, wraps every named function in a defineProperty call, so each closure made at run time
 * carries a 256-byte property store and costs a call more: that is the development path, not
 * what `npm run start:prod` runs.
 */
export const TYPESCRIPT_EXEC_ARGV =
  process.env.BENCH_RUNTIME === 'tsx' ? ['--import', 'tsx'] : ['--experimental-transform-types', '--disable-warning=ExperimentalWarning']
