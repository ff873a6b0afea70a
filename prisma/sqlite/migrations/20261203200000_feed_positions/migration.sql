-- Feed positions, tombstones, the database epoch, the summary derivation version and the flat read indexes.
-- DropIndex
DROP INDEX "Message_taskId_idx";

-- CreateTable
CREATE TABLE "TaskTombstone" (
    "taskId" TEXT NOT NULL PRIMARY KEY,
    "workspaceId" TEXT NOT NULL,
    "feedSequence" INTEGER NOT NULL,
    "deletedAt" DATETIME NOT NULL
);

-- CreateTable
CREATE TABLE "FeedEpoch" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "epoch" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL
);

-- RedefineTables
PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
CREATE TABLE "new_Task" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "workspaceId" TEXT NOT NULL,
    "workflowStepId" TEXT NOT NULL,
    "title" TEXT NOT NULL,
    "description" TEXT,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "lastActivityAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "feedSequence" INTEGER NOT NULL DEFAULT 0,
    CONSTRAINT "Task_workspaceId_fkey" FOREIGN KEY ("workspaceId") REFERENCES "Workspace" ("id") ON DELETE CASCADE ON UPDATE CASCADE,
    CONSTRAINT "Task_workflowStepId_fkey" FOREIGN KEY ("workflowStepId") REFERENCES "WorkflowStep" ("id") ON DELETE RESTRICT ON UPDATE CASCADE
);
INSERT INTO "new_Task" ("createdAt", "description", "id", "lastActivityAt", "title", "updatedAt", "workflowStepId", "workspaceId") SELECT "createdAt", "description", "id", "lastActivityAt", "title", "updatedAt", "workflowStepId", "workspaceId" FROM "Task";
DROP TABLE "Task";
ALTER TABLE "new_Task" RENAME TO "Task";
CREATE INDEX "Task_workspaceId_lastActivityAt_id_idx" ON "Task"("workspaceId", "lastActivityAt", "id");
CREATE INDEX "Task_workspaceId_feedSequence_idx" ON "Task"("workspaceId", "feedSequence");
CREATE INDEX "Task_workflowStepId_idx" ON "Task"("workflowStepId");
CREATE TABLE "new_TaskStatusSummary" (
    "taskId" TEXT NOT NULL PRIMARY KEY,
    "workspaceId" TEXT NOT NULL,
    "revision" INTEGER NOT NULL,
    "payload" TEXT NOT NULL,
    "updatedAt" DATETIME NOT NULL,
    "derivationVersion" INTEGER NOT NULL DEFAULT 0,
    "feedSequence" INTEGER NOT NULL DEFAULT 0,
    CONSTRAINT "TaskStatusSummary_taskId_fkey" FOREIGN KEY ("taskId") REFERENCES "Task" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_TaskStatusSummary" ("payload", "revision", "taskId", "updatedAt", "workspaceId") SELECT "payload", "revision", "taskId", "updatedAt", "workspaceId" FROM "TaskStatusSummary";
DROP TABLE "TaskStatusSummary";
ALTER TABLE "new_TaskStatusSummary" RENAME TO "TaskStatusSummary";
CREATE INDEX "TaskStatusSummary_workspaceId_feedSequence_idx" ON "TaskStatusSummary"("workspaceId", "feedSequence");
CREATE TABLE "new_Workspace" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "name" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "feedSequence" INTEGER NOT NULL DEFAULT 0,
    "feedFloor" INTEGER NOT NULL DEFAULT 0
);
INSERT INTO "new_Workspace" ("createdAt", "id", "name") SELECT "createdAt", "id", "name" FROM "Workspace";
DROP TABLE "Workspace";
ALTER TABLE "new_Workspace" RENAME TO "Workspace";
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;

-- CreateIndex
CREATE INDEX "TaskTombstone_workspaceId_feedSequence_idx" ON "TaskTombstone"("workspaceId", "feedSequence");

-- CreateIndex
CREATE INDEX "TaskTombstone_deletedAt_idx" ON "TaskTombstone"("deletedAt");

-- CreateIndex
CREATE INDEX "Message_taskId_status_kind_idx" ON "Message"("taskId", "status", "kind");

-- CreateIndex
CREATE INDEX "Message_taskId_author_createdAt_idx" ON "Message"("taskId", "author", "createdAt");

