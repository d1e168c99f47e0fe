-- DropIndex
DROP INDEX "follow_requests_target_id_created_at_idx";

-- CreateIndex
CREATE INDEX "follow_requests_target_id_requester_id_idx" ON "follow_requests"("target_id", "requester_id");
