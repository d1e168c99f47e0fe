-- CreateIndex
CREATE INDEX "follows_followee_id_created_at_follower_id_idx" ON "follows"("followee_id", "created_at" DESC, "follower_id" DESC);

-- CreateIndex
CREATE INDEX "follows_follower_id_created_at_followee_id_idx" ON "follows"("follower_id", "created_at" DESC, "followee_id" DESC);
