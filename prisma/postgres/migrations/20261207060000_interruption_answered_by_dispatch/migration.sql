-- The summary interruption is answered by the next dispatched turn, also a prompt queued before
-- the cut and dispatched after it (MAPPING interruption). Sessions where such a turn ran already
-- lose the mark: a dispatched user turn that the cut did not close, still open or completed after it.
-- (No semicolons or apostrophes in these comments: the engine splits the script naively.)
UPDATE "Session" SET "interruption" = NULL, "interruptedAt" = NULL
WHERE "interruption" IS NOT NULL AND EXISTS (
  SELECT 1 FROM "Turn" t
  WHERE t."sessionId" = "Session"."id" AND t."lifecycleOnly" = false AND t."promptDispatchAttempted" = true
    AND t."interruption" IS NULL AND (t."completedAt" IS NULL OR t."completedAt" > "Session"."interruptedAt")
);
