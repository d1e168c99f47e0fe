-- CreateExtension
CREATE EXTENSION IF NOT EXISTS "pg_trgm";

-- CreateEnum
CREATE TYPE "SearchOutboxOp" AS ENUM ('upsert', 'remove', 'account');

-- CreateTable
CREATE TABLE "search_outbox" (
    "id" BIGSERIAL NOT NULL,
    "op" "SearchOutboxOp" NOT NULL,
    "target_id" BIGINT NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "next_attempt_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "search_outbox_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "search_outbox_next_attempt_at_id_idx" ON "search_outbox"("next_attempt_at", "id");

-- CreateIndex
CREATE INDEX "notes_content_trgm_idx" ON "notes" USING GIN ("content" gin_trgm_ops);

-- CreateIndex
CREATE INDEX "notes_cw_comment_trgm_idx" ON "notes" USING GIN ("cw_comment" gin_trgm_ops);
