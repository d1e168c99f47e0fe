// Where a drive file is served (docs/drive.md#file-urls): `{PUBLIC_URL}/files/<id>`, its thumbnail
// beside it.
import type { Config } from "../../config.ts";
import { Prisma } from "../../db/client.ts";

/** The URL of a file, or "" for none (an unset avatar or header). */
export function fileUrl(config: Pick<Config, "publicUrl">, id: bigint | null | undefined): string {
  return id === null || id === undefined ? "" : `${config.publicUrl}/files/${id}`;
}

export function thumbnailUrl(config: Pick<Config, "publicUrl">, id: bigint): string {
  return `${fileUrl(config, id)}/thumbnail`;
}

/** fileUrl in SQL, of the file id `id` (SQL): "" for none; `suffix` after it (a thumbnail's). */
export function fileUrlSql(config: Pick<Config, "publicUrl">, id: Prisma.Sql, suffix = ""): Prisma.Sql {
  return Prisma.sql`CASE WHEN ${id} IS NULL THEN '' ELSE ${config.publicUrl} || '/files/' || ${id}::text || ${suffix} END`;
}

/** A timestamp column as JSON carries it (Date#toISOString, docs/http.md#timestamps), in SQL. */
export function isoTimeSql(column: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}
