// The account as every renderer draws it (field.ts), of an accounts row.
import { Prisma } from "../db/client.ts";
import { qualifiedName, qualifiedNameSql } from "../domain/accounts/rules.ts";
import { visibleEmail, visibleEmailSql } from "../domain/accounts/service.ts";
import { fileUrl, fileUrlSql } from "../domain/drive/urls.ts";
import type { Account } from "../generated/prisma/client.ts";
import { column, columnOf, snowflake, stored, timestamp } from "./field.ts";

export const ACCOUNT = {
  id: snowflake("id", "id"),
  /** `@name@host` (docs/accounts.md#names), a remote account's with its own server's host. */
  name: column(
    (a: Pick<Account, "name" | "host">, v) => qualifiedName(a.name, v.localHost, a.host),
    (t, v) => qualifiedNameSql(columnOf(t, "name"), v.localHost, columnOf(t, "host")),
  ),
  /** A remote account's server (docs/federation.md#remote-accounts); null for a local account. */
  host: stored<"host", string | null>("host", "host"),
  nickname: stored<"nickname", string>("nickname", "nickname"),
  bio: stored<"bio", string>("bio", "bio"),
  /** A remote account's images are not copied: their URLs point to their origin. */
  avatar: column(
    (a: Pick<Account, "avatarFileId" | "avatarUrl">, v) => a.avatarUrl ?? fileUrl(v, a.avatarFileId),
    (t, v) => Prisma.sql`COALESCE(${columnOf(t, "avatar_url")}, ${fileUrlSql(v, columnOf(t, "avatar_file_id"))})`,
  ),
  header: column(
    (a: Pick<Account, "headerFileId" | "headerUrl">, v) => a.headerUrl ?? fileUrl(v, a.headerFileId),
    (t, v) => Prisma.sql`COALESCE(${columnOf(t, "header_url")}, ${fileUrlSql(v, columnOf(t, "header_file_id"))})`,
  ),
  followersCount: stored<"followersCount", number>("followersCount", "followers_count"),
  followingCount: stored<"followingCount", number>("followingCount", "following_count"),
  notesCount: stored<"notesCount", number>("notesCount", "notes_count"),
  locked: stored<"locked", boolean>("locked", "locked"),
  /** The e-mail to its owner only; null to anyone else. */
  visibleEmail: column(
    (a: Pick<Account, "id" | "email">, v) => visibleEmail(v.viewerId, a),
    (t, v) => visibleEmailSql(v.viewerId, t),
  ),
  verified: stored<"verified", boolean>("verified", "verified"),
  role: column(
    (a: Pick<Account, "role">) => a.role,
    (t) => columnOf(t, "role::text"),
  ),
  createdAt: timestamp("createdAt", "created_at"),
  /** The e-mail, where the shape is only ever its owner's (a registration, an update, an export). */
  email: stored<"email", string>("email", "email"),
};
