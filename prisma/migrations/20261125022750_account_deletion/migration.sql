-- AlterTable
ALTER TABLE "accounts" ADD COLUMN     "deleted_at" TIMESTAMPTZ(3);

-- CreateTable
CREATE TABLE "account_deletions" (
    "account_id" BIGINT NOT NULL,
    "requested_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "lease_owner" TEXT,
    "lease_until" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "account_deletions_pkey" PRIMARY KEY ("account_id")
);

-- CreateTable
CREATE TABLE "stored_file_removals" (
    "key" TEXT NOT NULL,
    "account_id" BIGINT NOT NULL,

    CONSTRAINT "stored_file_removals_pkey" PRIMARY KEY ("key")
);

-- CreateIndex
CREATE INDEX "account_deletions_lease_until_idx" ON "account_deletions"("lease_until");

-- CreateIndex
CREATE INDEX "stored_file_removals_account_id_idx" ON "stored_file_removals"("account_id");

-- CreateIndex
CREATE INDEX "notifications_actor_id_idx" ON "notifications"("actor_id");

-- CreateIndex
CREATE INDEX "reactions_account_id_note_id_idx" ON "reactions"("account_id", "note_id");

-- AddForeignKey
ALTER TABLE "account_deletions" ADD CONSTRAINT "account_deletions_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "stored_file_removals" ADD CONSTRAINT "stored_file_removals_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;
