-- CreateTable
CREATE TABLE "drive_files" (
    "id" BIGINT NOT NULL,
    "owner_id" BIGINT,
    "name" TEXT NOT NULL,
    "mime" TEXT NOT NULL,
    "size" BIGINT NOT NULL,
    "nsfw" BOOLEAN NOT NULL DEFAULT false,
    "blurhash" TEXT NOT NULL DEFAULT '',
    "thumbnail_size" INTEGER,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "drive_files_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "custom_emojis" (
    "id" BIGINT NOT NULL,
    "alias" TEXT NOT NULL,
    "file_id" BIGINT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "custom_emojis_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "drive_files_owner_id_id_idx" ON "drive_files"("owner_id", "id" DESC);

-- CreateIndex
CREATE UNIQUE INDEX "custom_emojis_alias_key" ON "custom_emojis"("alias");

-- CreateIndex
CREATE UNIQUE INDEX "custom_emojis_file_id_key" ON "custom_emojis"("file_id");

-- AddForeignKey
ALTER TABLE "drive_files" ADD CONSTRAINT "drive_files_owner_id_fkey" FOREIGN KEY ("owner_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "custom_emojis" ADD CONSTRAINT "custom_emojis_file_id_fkey" FOREIGN KEY ("file_id") REFERENCES "drive_files"("id") ON DELETE CASCADE ON UPDATE CASCADE;
