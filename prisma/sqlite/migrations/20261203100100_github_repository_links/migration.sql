-- Pull-request observations now exist per workspace, under a GitHub repository link of that
-- workspace. No link exists yet, so every observation stored before would be data of an
-- unlinked repository (the old rule linked by name + branch across workspaces): they are
-- dropped, not carried over. The next delivery of a repository the admin links rebuilds them;
-- startup reconciliation re-derives the summaries that showed them.

-- CreateTable
CREATE TABLE "GitHubRepositoryLink" (
    "workspaceId" TEXT NOT NULL,
    "repository" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,

    PRIMARY KEY ("workspaceId", "repository"),
    CONSTRAINT "GitHubRepositoryLink_workspaceId_fkey" FOREIGN KEY ("workspaceId") REFERENCES "Workspace" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- RedefineTables
PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
CREATE TABLE "new_PullRequestObservation" (
    "workspaceId" TEXT NOT NULL,
    "repository" TEXT NOT NULL,
    "linkedRepository" TEXT NOT NULL,
    "number" INTEGER NOT NULL,
    "taskId" TEXT,
    "taskRepositoryId" TEXT,
    "url" TEXT NOT NULL,
    "title" TEXT NOT NULL,
    "headBranch" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "draft" BOOLEAN NOT NULL DEFAULT false,
    "checks" TEXT NOT NULL DEFAULT 'NONE',
    "reviewDecision" TEXT,
    "mergeableState" TEXT,
    "autoFix" BOOLEAN NOT NULL DEFAULT false,
    "autoMerge" BOOLEAN NOT NULL DEFAULT false,
    "updatedAt" DATETIME NOT NULL,

    PRIMARY KEY ("workspaceId", "repository", "number"),
    CONSTRAINT "PullRequestObservation_workspaceId_linkedRepository_fkey" FOREIGN KEY ("workspaceId", "linkedRepository") REFERENCES "GitHubRepositoryLink" ("workspaceId", "repository") ON DELETE CASCADE ON UPDATE CASCADE,
    CONSTRAINT "PullRequestObservation_taskId_fkey" FOREIGN KEY ("taskId") REFERENCES "Task" ("id") ON DELETE SET NULL ON UPDATE CASCADE,
    CONSTRAINT "PullRequestObservation_taskRepositoryId_fkey" FOREIGN KEY ("taskRepositoryId") REFERENCES "TaskRepository" ("id") ON DELETE SET NULL ON UPDATE CASCADE
);
DROP TABLE "PullRequestObservation";
ALTER TABLE "new_PullRequestObservation" RENAME TO "PullRequestObservation";
CREATE INDEX "PullRequestObservation_workspaceId_linkedRepository_idx" ON "PullRequestObservation"("workspaceId", "linkedRepository");
CREATE INDEX "PullRequestObservation_taskId_idx" ON "PullRequestObservation"("taskId");
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;

-- CreateIndex
CREATE INDEX "GitHubRepositoryLink_repository_idx" ON "GitHubRepositoryLink"("repository");
