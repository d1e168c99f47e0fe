-- What deliveries to each remote server came to (src/federation/hosts.ts): one row per host this
-- server has POSTed to, updated in batches as outcomes come, for `murmur instance list` and
-- GET /admin/instances (docs/federation.md#delivery). `failures` counts the failed POSTs since
-- the last one that succeeded.
CREATE TABLE "federation_hosts" (
    "host" TEXT NOT NULL,
    "last_success_at" TIMESTAMPTZ(3),
    "last_failure_at" TIMESTAMPTZ(3),
    "failures" INTEGER NOT NULL DEFAULT 0,
    "last_error" TEXT,

    CONSTRAINT "federation_hosts_pkey" PRIMARY KEY ("host")
);
