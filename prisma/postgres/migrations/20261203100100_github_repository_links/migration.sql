-- Pull-request observations now exist per workspace, under a GitHub repository link of that
-- workspace. No link exists yet, so every observation stored before would be data of an
-- unlinked repository (the old rule linked by name + branch across workspaces): they are
-- dropped, not carried over. The next delivery of a repository the admin links rebuilds them;
-- startup reconciliation re-derives the summaries that showed them.

-- DropIndex
DROP INDEX "PullRequestObservation_repository_headBranch_idx";

-- AlterTable (the new NOT NULL columns have no value for old rows)
DELETE FROM "PullRequestObservation";
ALTER TABLE "PullRequestObservation" DROP CONSTRAINT "PullRequestObservation_pkey",
ADD COLUMN     "linkedRepository" TEXT NOT NULL,
ADD COLUMN     "workspaceId" TEXT NOT NULL,
ADD CONSTRAINT "PullRequestObservation_pkey" PRIMARY KEY ("workspaceId", "repository", "number");

-- CreateTable
CREATE TABLE "GitHubRepositoryLink" (
    "workspaceId" TEXT NOT NULL,
    "repository" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "GitHubRepositoryLink_pkey" PRIMARY KEY ("workspaceId","repository")
);

-- CreateIndex
CREATE INDEX "GitHubRepositoryLink_repository_idx" ON "GitHubRepositoryLink"("repository");

-- CreateIndex
CREATE INDEX "PullRequestObservation_workspaceId_linkedRepository_idx" ON "PullRequestObservation"("workspaceId", "linkedRepository");

-- AddForeignKey
ALTER TABLE "GitHubRepositoryLink" ADD CONSTRAINT "GitHubRepositoryLink_workspaceId_fkey" FOREIGN KEY ("workspaceId") REFERENCES "Workspace"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "PullRequestObservation" ADD CONSTRAINT "PullRequestObservation_workspaceId_linkedRepository_fkey" FOREIGN KEY ("workspaceId", "linkedRepository") REFERENCES "GitHubRepositoryLink"("workspaceId", "repository") ON DELETE CASCADE ON UPDATE CASCADE;
