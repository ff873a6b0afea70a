-- The clientMessageId of a user message is unique per workspace, no longer the global primary
-- key: the same id in another workspace is another message there (its owner learns nothing of
-- the first). New rows get an id of the server, rows stored before keep theirs (it was the id of
-- the client) and carry it over as clientMessageId, with the workspace of their task.
-- (No semicolons or apostrophes in these comments: the engine splits the script naively.)

-- AlterTable
ALTER TABLE "Message" ADD COLUMN     "clientMessageId" TEXT,
ADD COLUMN     "workspaceId" TEXT;

UPDATE "Message"
SET "clientMessageId" = "Message"."id", "workspaceId" = "Task"."workspaceId"
FROM "Task"
WHERE "Task"."id" = "Message"."taskId" AND "Message"."author" = 'USER';

-- CreateIndex
CREATE UNIQUE INDEX "Message_workspaceId_clientMessageId_key" ON "Message"("workspaceId", "clientMessageId");
