// GitHub webhook deliveries already processed: GitHub redelivers, and a delivery is applied once.
import type { Store } from './store.ts'

/** Whether a delivery id was processed before (GitHub redelivers). */
export async function webhookDeliverySeen({ db }: Store, id: string): Promise<boolean> {
  return (await db.webhookDelivery.findUnique({ where: { id }, select: { id: true } })) !== null
}

/** Records a processed webhook delivery id; false when it was recorded already (a concurrent copy). */
export async function recordWebhookDelivery({ db }: Store, id: string, event: string): Promise<boolean> {
  try {
    await db.webhookDelivery.create({ data: { id, event } })
    return true
  } catch (error) {
    if ((error as { code?: string }).code === 'P2002') return false
    throw error
  }
}
