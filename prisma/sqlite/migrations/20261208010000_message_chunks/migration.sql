-- A streamed message keeps its content as inserted and its appends in MessageChunk rows, so an
-- append writes only its own bytes. Existing messages are whole in their content: 0 chunks follow.
-- (No semicolons or apostrophes in these comments: the engine splits the script naively.)

-- AlterTable
ALTER TABLE "Message" ADD COLUMN "appendedChunks" INTEGER NOT NULL DEFAULT 0;

-- CreateTable
CREATE TABLE "MessageChunk" (
    "messageId" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "text" TEXT NOT NULL,

    PRIMARY KEY ("messageId", "seq"),
    CONSTRAINT "MessageChunk_messageId_fkey" FOREIGN KEY ("messageId") REFERENCES "Message" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
