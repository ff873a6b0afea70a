-- Real agents (v1.4): the agent current session mode and its latest plan live on the session.
-- (No semicolons or apostrophes in these comments: the engine splits the script naively.)

-- AlterTable
ALTER TABLE "Session" ADD COLUMN "currentModeId" TEXT;
ALTER TABLE "Session" ADD COLUMN "plan" TEXT NOT NULL DEFAULT '[]';
