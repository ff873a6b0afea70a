-- Attention fields (v1.3): which way the server cut a turn off, prompts waiting in a session queue,
-- the stored NEEDS_ATTENTION position of each summary, and the indexes of the task orders.
-- (No semicolons or apostrophes in these comments: the engine splits the script naively.)
-- Existing summaries keep the defaults until startup reconciliation rewrites them.

-- AlterTable
ALTER TABLE "Turn" ADD COLUMN     "interruption" TEXT,
ADD COLUMN     "queuedAt" TIMESTAMP(3);

-- AlterTable
ALTER TABLE "TaskStatusSummary" ADD COLUMN     "attentionRank" INTEGER NOT NULL DEFAULT 2,
ADD COLUMN     "attentionKey" DOUBLE PRECISION NOT NULL DEFAULT 0;

-- CreateIndex
CREATE INDEX "TaskStatusSummary_attention_idx" ON "TaskStatusSummary"("workspaceId", "attentionRank", "attentionKey", "taskId" DESC);

-- CreateIndex
CREATE INDEX "Task_workspaceId_createdAt_id_idx" ON "Task"("workspaceId", "createdAt", "id");
