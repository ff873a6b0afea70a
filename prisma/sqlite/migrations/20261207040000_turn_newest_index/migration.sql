-- A session's newest turn is read along an index that orders ties by id as the summary rules do,
-- so reading it sorts nothing however many turns the session has.
-- (No semicolons or apostrophes in these comments: the engine splits the script naively.)

-- DropIndex
DROP INDEX "Turn_sessionId_startedAt_idx";

-- CreateIndex
CREATE INDEX "Turn_sessionId_startedAt_id_idx" ON "Turn"("sessionId", "startedAt", "id");
