-- Fedify's message queue and key-value store on Murmur's PostgreSQL:
-- src/federation/message-queue.ts and src/federation/kv-store.ts.

-- A queued message. `run_at` is when it may next be claimed: its delay's end, and while a worker
-- holds it, the end of that worker's lease (renewed while it runs), so a message whose worker died
-- is claimed again once the lease lapses. `attempts` counts claims: a message with an ordering key
-- that has been tried (or is due) holds back the later messages of its key.
CREATE TABLE "federation_messages" (
    "id" BIGSERIAL NOT NULL,
    "queue" TEXT NOT NULL,
    "message" JSONB NOT NULL,
    "ordering_key" TEXT,
    "run_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "claimed_by" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "federation_messages_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "federation_messages_queue_run_at_idx" ON "federation_messages" ("queue", "run_at");
CREATE INDEX "federation_messages_queue_ordering_key_id_idx" ON "federation_messages" ("queue", "ordering_key", "id")
    WHERE "ordering_key" IS NOT NULL;

-- Fedify's key-value store (cached documents, keys, idempotence records). `key` is the key, an
-- array of strings, as JSON, compared byte by byte (COLLATE "C"): the keys under a prefix are a
-- range of the primary key, which a LIKE 'prefix%' reads.
CREATE TABLE "federation_kv" (
    "key" TEXT COLLATE "C" NOT NULL,
    "value" JSONB NOT NULL,
    "expires_at" TIMESTAMPTZ(3),

    CONSTRAINT "federation_kv_pkey" PRIMARY KEY ("key")
);

CREATE INDEX "federation_kv_expires_at_idx" ON "federation_kv" ("expires_at") WHERE "expires_at" IS NOT NULL;
