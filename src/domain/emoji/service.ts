// Custom emoji (`<:alias:id>` in reactions): an alias and an image stored as an instance-owned
// drive file, through the same storage as uploads.
import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import { uniqueViolation } from "../../db/client.ts";
import type { CustomEmoji } from "../../generated/prisma/client.ts";
import type { Services } from "../context.ts";
import { sniffType } from "../drive/media.ts";
import { MAX_FILE_SIZE, storeDriveFile } from "../drive/service.ts";
import { DomainError } from "../errors.ts";

const ALIAS = /^[A-Za-z0-9_]{2,64}$/;

/** Operator command: adds a custom emoji from a local image file. */
export async function addCustomEmoji(services: Services, alias: string, imageFile: string): Promise<CustomEmoji> {
  if (!ALIAS.test(alias)) {
    throw new DomainError("INVALID_REQUEST", { detail: `alias "${alias}" must be 2 to 64 letters, digits or _` });
  }
  const { size } = await fs.stat(imageFile);
  if (size === 0) throw new DomainError("INVALID_REQUEST", { detail: `${imageFile} is empty` });
  if (size > MAX_FILE_SIZE) {
    throw new DomainError("FILE_SIZE_TOO_BIG", { detail: `${imageFile} is over ${MAX_FILE_SIZE} bytes` });
  }
  const type = await sniffType(imageFile).catch((err) => {
    if (err instanceof DomainError && err.code === "UNSUPPORTED_FILE_TYPE") return "";
    throw err;
  });
  if (!type.startsWith("image/")) {
    throw new DomainError("UNSUPPORTED_FILE_TYPE", { detail: `${imageFile} is not an image of a known type` });
  }
  const taken = () => new DomainError("INVALID_REQUEST", { detail: `alias "${alias}" is taken` });
  if (await services.db.customEmoji.findUnique({ where: { alias } })) throw taken();

  // storeDriveFile moves its input into storage: give it a copy.
  const copy = path.join(services.storage.scratchDir, randomBytes(12).toString("hex"));
  await fs.copyFile(imageFile, copy);
  try {
    const file = await storeDriveFile(services, {
      ownerId: null,
      name: path.basename(imageFile),
      nsfw: false,
      localPath: copy,
      size,
    });
    try {
      return await services.db.customEmoji.create({ data: { id: services.ids.next(), alias, fileId: file.id } });
    } catch (err) {
      await services.db.driveFile.delete({ where: { id: file.id } });
      await Promise.all([services.storage.delete(file.id.toString()), services.storage.delete(`${file.id}.thumbnail`)]);
      if (uniqueViolation(err)) throw taken();
      throw err;
    }
  } finally {
    await fs.rm(copy, { force: true });
  }
}
