// P2's requests of the server process (bench/server-process.ts): seeding through the store and the
// send windows the scheduler settled on.
import type { RunningServer } from '../src/app/start-server.ts'
import { createTask } from '../src/store/tasks.ts'
import { adminWorkspace } from './seed.ts'

export const handlers = {
  /** A workspace of the admin with one task; the scenario starts its sessions over GraphQL. */
  seed: async (server: RunningServer) => {
    const workspace = await adminWorkspace(server.store, 'p2')
    const task = await createTask(server.store, { workspaceId: workspace.id, title: 'control lane' })
    return { taskId: task.id }
  },
  /** Every open connection's send window (absent in FIFO mode). */
  windows: (server: RunningServer) => server.gateway.connections().map((c) => c.scheduler.window ?? null),
}
