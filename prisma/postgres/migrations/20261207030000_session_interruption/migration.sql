-- The summary interruption lives on the session: set by recovery and takeover, cleared by the
-- next user prompt or resumeSession. A queued prompt dispatched after the cut no longer hides it.
-- (No semicolons or apostrophes in these comments: the engine splits the script naively.)
-- Backfill: a session whose newest turn the server cut off keeps showing it.

-- AlterTable
ALTER TABLE "Session" ADD COLUMN     "interruption" TEXT,
ADD COLUMN     "interruptedAt" TIMESTAMP(3);

-- Backfill
UPDATE "Session" SET
  "interruption" = (SELECT t."interruption" FROM "Turn" t WHERE t."sessionId" = "Session"."id" ORDER BY t."startedAt" DESC, t."id" DESC LIMIT 1),
  "interruptedAt" = (SELECT t."completedAt" FROM "Turn" t WHERE t."sessionId" = "Session"."id" AND t."interruption" IS NOT NULL ORDER BY t."startedAt" DESC, t."id" DESC LIMIT 1);
UPDATE "Session" SET "interruptedAt" = NULL WHERE "interruption" IS NULL;
