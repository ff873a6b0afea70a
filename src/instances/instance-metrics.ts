import { Counter, Gauge, Histogram, type Registry } from 'prom-client'

/** Ownership and forwarding on this instance. No per-session labels: their number is unbounded. */
export function createInstanceMetrics(registry: Registry, liveSessions: () => number) {
  return {
    ownedSessions: new Gauge({
      name: 'instance_owned_sessions',
      help: 'Sessions whose agent process runs on this instance',
      registers: [registry],
      collect() {
        this.set(liveSessions())
      },
    }),
    forwarded: new Counter({
      name: 'instance_forwarded_commands_total',
      help: 'Session commands this instance forwarded to the owning instance, by command and outcome (ok, error, unavailable)',
      labelNames: ['command', 'outcome'],
      registers: [registry],
    }),
    forwardDuration: new Histogram({
      name: 'instance_forwarded_command_duration_seconds',
      help: 'Round trip of a forwarded session command, from sending it to the owner to its reply',
      labelNames: ['command'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    served: new Counter({
      name: 'instance_served_commands_total',
      help: 'Session commands other instances forwarded to this one, by command',
      labelNames: ['command'],
      registers: [registry],
    }),
    takeovers: new Counter({
      name: 'instance_session_takeovers_total',
      help: 'Sessions this instance took over from instances whose lease expired (reason: startup, lease, on-demand)',
      labelNames: ['reason'],
      registers: [registry],
    }),
  }
}

export type InstanceMetrics = ReturnType<typeof createInstanceMetrics>
