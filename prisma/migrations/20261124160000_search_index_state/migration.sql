-- CreateTable
CREATE TABLE "search_index_state" (
    "index_name" TEXT NOT NULL,
    "generation" TEXT,
    "folding" INTEGER,
    "built_at" TIMESTAMPTZ(3),
    "rebuild_owner" TEXT,
    "rebuild_until" TIMESTAMPTZ(3),

    CONSTRAINT "search_index_state_pkey" PRIMARY KEY ("index_name")
);
