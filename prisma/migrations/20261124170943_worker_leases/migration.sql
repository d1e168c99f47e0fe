-- CreateTable
CREATE TABLE "worker_leases" (
    "worker_id" INTEGER NOT NULL,
    "owner" TEXT,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "worker_leases_pkey" PRIMARY KEY ("worker_id")
);

-- CreateIndex
CREATE INDEX "worker_leases_expires_at_idx" ON "worker_leases"("expires_at");

-- Every worker id, free (its lease long expired).
INSERT INTO "worker_leases" ("worker_id", "expires_at") SELECT g, 'epoch' FROM generate_series(0, 1023) g;
