import { build } from 'vite'

/** Builds src/web with the project's vite.config.ts into outDir, as `npm run build:web` does into dist/web. */
export async function buildWebPage(outDir: string): Promise<void> {
  await build({ configFile: new URL('../../vite.config.ts', import.meta.url).pathname, build: { outDir, emptyOutDir: true }, logLevel: 'error' })
}
