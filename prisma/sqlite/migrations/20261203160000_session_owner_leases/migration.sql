-- Each session names the instance that runs its agent, and each instance renews a lease.
-- (No semicolons or apostrophes in these comments: the engine splits the script naively.)

-- AlterTable
ALTER TABLE "Session" ADD COLUMN "ownerInstanceId" TEXT;

-- CreateTable
CREATE TABLE "ServerInstance" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "startedAt" DATETIME NOT NULL,
    "renewedAt" DATETIME NOT NULL,
    "leaseExpiresAt" DATETIME NOT NULL
);

-- CreateIndex
CREATE INDEX "ServerInstance_leaseExpiresAt_idx" ON "ServerInstance"("leaseExpiresAt");

-- CreateIndex
CREATE INDEX "Session_ownerInstanceId_state_idx" ON "Session"("ownerInstanceId", "state");

