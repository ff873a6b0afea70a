-- Feed positions (a per-workspace sequence, task and summary positions, tombstones, the database epoch),
-- the summary derivation version, and the indexes of the flat read path.
-- (No semicolons or apostrophes in these comments: the engine splits the script naively.)

-- DropIndex
DROP INDEX "Message_taskId_idx";

-- DropIndex
DROP INDEX "TaskStatusSummary_workspaceId_idx";

-- AlterTable
ALTER TABLE "Workspace" ADD COLUMN     "feedSequence" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "feedFloor" INTEGER NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "Task" ADD COLUMN     "feedSequence" INTEGER NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "TaskStatusSummary" ADD COLUMN     "derivationVersion" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "feedSequence" INTEGER NOT NULL DEFAULT 0;

-- CreateTable
CREATE TABLE "TaskTombstone" (
    "taskId" TEXT NOT NULL,
    "workspaceId" TEXT NOT NULL,
    "feedSequence" INTEGER NOT NULL,
    "deletedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "TaskTombstone_pkey" PRIMARY KEY ("taskId")
);

-- CreateTable
CREATE TABLE "FeedEpoch" (
    "id" TEXT NOT NULL,
    "epoch" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "FeedEpoch_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "Task_workspaceId_feedSequence_idx" ON "Task"("workspaceId", "feedSequence");

-- CreateIndex
CREATE INDEX "Message_taskId_status_kind_idx" ON "Message"("taskId", "status", "kind");

-- CreateIndex
CREATE INDEX "Message_taskId_author_createdAt_idx" ON "Message"("taskId", "author", "createdAt");

-- CreateIndex
CREATE INDEX "TaskStatusSummary_workspaceId_feedSequence_idx" ON "TaskStatusSummary"("workspaceId", "feedSequence");

-- CreateIndex
CREATE INDEX "TaskTombstone_workspaceId_feedSequence_idx" ON "TaskTombstone"("workspaceId", "feedSequence");

-- CreateIndex
CREATE INDEX "TaskTombstone_deletedAt_idx" ON "TaskTombstone"("deletedAt");
