// Where a drive file is served (CONTRACT 7): `{PUBLIC_URL}/files/<id>`, its thumbnail beside it.
import type { Config } from "../../config.ts";

/** The URL of a file, or "" for none (an unset avatar or header). */
export function fileUrl(config: Pick<Config, "publicUrl">, id: bigint | null | undefined): string {
  return id === null || id === undefined ? "" : `${config.publicUrl}/files/${id}`;
}

export function thumbnailUrl(config: Pick<Config, "publicUrl">, id: bigint): string {
  return `${fileUrl(config, id)}/thumbnail`;
}
