-- A turn the server closed because it was cut off (restart, takeover, crash, stop) says so.
-- (No semicolons or apostrophes in these comments: the engine splits the script naively.)

-- AlterTable
ALTER TABLE "Turn" ADD COLUMN "interrupted" BOOLEAN NOT NULL DEFAULT false;
