-- A pull-request observation keeps the GitHub times of what it shows (the pull request, its
-- checks, its review decision), so an older delivery (a replay under a new delivery id, a late
-- redelivery) changes nothing. Rows stored before have none and take the next delivery.
-- (No semicolons or apostrophes in these comments: the engine splits the script naively.)

-- AlterTable
ALTER TABLE "PullRequestObservation" ADD COLUMN     "sourceUpdatedAt" TIMESTAMP(3),
ADD COLUMN     "checksSourceAt" TIMESTAMP(3),
ADD COLUMN     "reviewSourceAt" TIMESTAMP(3);
