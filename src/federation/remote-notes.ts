// Notes of other servers received (docs/federation.md, "Remote notes received"): Create(Note),
// Announce and its Undo, Update and Delete of a note, read into what src/domain/notes/remote.ts
// writes. A note is kept only when a local account may care (its author followed here, or a local
// account addressed, mentioned or replied to), and is the author's own: its id, its author and the
// activity's signer on one origin.
import type { Context, InboxContext, InboxListenerSetters } from "@fedify/fedify";
import {
  Announce,
  Article,
  Create,
  Delete,
  Document,
  Link,
  Mention,
  Note,
  Page,
  PUBLIC_COLLECTION,
  Question,
  type Update,
} from "@fedify/fedify/vocab";
import { compile, type HtmlToTextOptions } from "html-to-text";
import { type Db, Prisma, queryRows } from "../db/client.ts";
import { parseSnowflake } from "../db/snowflake.ts";
import { MAX_FILE_NAME } from "../domain/drive/service.ts";
import { deleteRemoteNote, type RemoteFile, storeRemoteNote, updateRemoteNote } from "../domain/notes/remote.ts";
import { LIMITS } from "../domain/notes/service.ts";
import { overtakenSql } from "../domain/overtaken.ts";
import type { Account, Visibility } from "../generated/prisma/client.ts";
import type { FederationData } from "./data.ts";
import { instanceLoader } from "./keys.ts";
import { actorAccount, displayText, HTML_TO_TEXT, stale } from "./remote-accounts.ts";
import { blurhashesOf, rememberSource } from "./vocab.ts";

/**
 * How many notes one received activity may have fetched: parents, quoted notes, their parents...
 * Past them a note is stored without its link. Each fetch is one bounded request
 * (src/federation/safe-fetch.ts), and each level of recursion one fetch, so a reply chain of any
 * length, or a tree of replies and quotes, costs at most this many.
 */
export const MAX_FETCHES = 8;

/** What is left of one activity's MAX_FETCHES. */
interface Fetches {
  left: number;
}
/** Of a note's tags, how many are looked at for mentions of local accounts, and how many of those kept. */
const MAX_TAGS = 1000;
const MAX_MENTIONED = 64;

/** The kinds of object taken as a note. */
type NoteLike = Note | Article | Page | Question;

/** Loaders for a property's values given only by URL: not fetched (the loader refuses), skipped. */
const NO_FETCH = { documentLoader: () => Promise.reject(new Error("not fetched")), suppressError: true };

function isNoteLike(object: unknown): object is NoteLike {
  return object instanceof Note || object instanceof Article || object instanceof Page || object instanceof Question;
}

/** Remote HTML as note text: script and style bodies dropped with the markup. */
const NOTE_TEXT: HtmlToTextOptions = {
  ...HTML_TO_TEXT,
  selectors: [
    ...(HTML_TO_TEXT.selectors ?? []),
    { selector: "script", format: "skip" },
    { selector: "style", format: "skip" },
  ],
};

/** NOTE_TEXT compiled once: convert() compiled its selectors again for every note, ~4% of an instance's CPU taking notes in. */
const noteText = compile(NOTE_TEXT);

/**
 * NOTE_TEXT for a quote: without its `RE: <link>` (`class="quote-inline"`), which Misskey and
 * Mastodon add to a quote's HTML for servers that show no quotes. Murmur shows the quoted note.
 */
const quoteText = compile({
  ...NOTE_TEXT,
  selectors: [...(NOTE_TEXT.selectors ?? []), { selector: ".quote-inline", format: "skip" }],
});

function plainText(html: string | undefined, max: number, convert = noteText): string {
  return displayText(html ? convert(html).trim() : "", max);
}

/** A note's text and content warning as Murmur keeps them, cut to the local limits. */
function textOf(object: NoteLike): { content: string; cwComment: string } {
  const html = object.content?.toString() || (object instanceof Article ? object.name?.toString() : undefined);
  return {
    content: plainText(html, LIMITS.content, quoteOf(object) ? quoteText : noteText),
    cwComment: plainText(object.summary?.toString(), LIMITS.cwComment).replace(/\n+/g, " "),
  };
}

export function listenToNotes(listeners: InboxListenerSetters<FederationData>): void {
  listeners
    .on(Create, async (ctx, create) => {
      if (!create.actorId) return;
      const object = await create.getObject({ ...(await loaders(ctx)), suppressError: true });
      if (!isNoteLike(object) || object.attributionId?.href !== create.actorId.href) return;
      rememberSource(object, create);
      if (!object.id || object.attributionId.origin !== object.id.origin) return;
      const known = await createKnown(ctx.data.db, object.attributionId, object.id);
      // A note whose Delete came first is not stored: nothing of its author is fetched for it either.
      if (known.author?.deletedAt || known.deleted) return;
      // An author stored and fresh is the one actorAccount would give: else as it gives it.
      const fresh = known.author && !stale(known.author) ? known.author : undefined;
      const author = fresh ?? (await authorOf(ctx, object));
      if (!author || !(await concernsLocal(ctx, author, object, fresh && known.followed))) return;
      await storeObject(ctx, object, author, { left: MAX_FETCHES }, known.stored);
    })
    .on(Announce, async (ctx, announce) => {
      if (!announce.id || !announce.actorId || !announce.objectId) return;
      if (announce.id.origin !== announce.actorId.origin) return;
      const local = await localNote(ctx, announce.objectId);
      const announcer = await actorAccount(ctx, announce.actorId);
      if (!announcer) return;
      // Kept when it renotes a local note, or its author is followed here.
      if (!local && !(await followedHere(ctx, announcer))) return;
      const visibility = visibilityOf(announcer, announce.toIds, announce.ccIds);
      if (visibility !== "public" && visibility !== "home" && visibility !== "followers") return;
      const target = local ?? (await resolveNote(ctx, announce.objectId, { left: MAX_FETCHES }));
      if (!target || (target.visibility !== "public" && target.visibility !== "home")) return;
      await storeRemoteNote(ctx.data, {
        uri: announce.id.href,
        url: null,
        authorId: announcer.id,
        content: "",
        cwComment: "",
        visibility,
        sendToId: null,
        replyToId: null,
        renoteId: target.id,
        mentionedIds: [],
        attachments: [],
      });
    });
}

/** An Update of a note, applied when the signer is its author. Whether it was one. */
export async function noteUpdated(ctx: InboxContext<FederationData>, update: Update): Promise<boolean> {
  if (!update.actorId) return false;
  const object = await update.getObject({ ...(await loaders(ctx)), suppressError: true });
  if (!isNoteLike(object) || !object.id || object.attributionId?.href !== update.actorId.href) return false;
  return updateRemoteNote(ctx.data, update.actorId.href, object.id.href, textOf(object));
}

/**
 * A Delete of a note (its id, a Tombstone or the Note itself: only its id is read), applied when the
 * signer is its author; or an Undo of an Announce, whose renote goes. Whether it was one.
 */
export async function noteDeleted(
  ctx: InboxContext<FederationData>,
  deletion: Delete | { actorId: URL | null; objectId: URL | null },
): Promise<boolean> {
  if (!deletion.actorId || !deletion.objectId) return false;
  // A note of the sender's own origin: its Create, come late or sent again, is not stored.
  const remember = deletion instanceof Delete && deletion.objectId.origin === deletion.actorId.origin;
  return deleteRemoteNote(ctx.data, deletion.actorId.href, deletion.objectId.href, { remember });
}

async function loaders(ctx: Context<FederationData>) {
  return { documentLoader: await instanceLoader(ctx) };
}

/** The note's author, stored; null unless the note, its author and its id are of one origin. */
async function authorOf(ctx: Context<FederationData>, object: NoteLike): Promise<Account | null> {
  const attribution = object.attributionId;
  if (!object.id || !attribution || attribution.origin !== object.id.origin) return null;
  return actorAccount(ctx, attribution);
}

/** What the Create of note `note` by `author` needs to know that is stored here, read in one statement. */
export interface CreateKnown {
  /** The author's remote account, if stored (deleted too). */
  author: Pick<Account, "id" | "followersUrl" | "fetchedAt" | "deletedAt"> | null;
  /** Whether a local account follows it (followedHere). */
  followed: boolean;
  /** The note's id, if stored. */
  stored: bigint | null;
  /** Whether the note's Delete came first (src/domain/overtaken.ts). */
  deleted: boolean;
}

/**
 * What a Create needs to know, read in one statement rather than four (the author, whether it is
 * followed here, the note stored, its Delete remembered): a Create is the activity a server takes
 * in most, and each statement costs the server a round trip (bench/README.md, "Federation at
 * scale"). test/federation-intake.test.ts holds it equal to the reads it stands for.
 */
export async function createKnown(db: Db, author: URL, note: URL): Promise<CreateKnown> {
  // Through node-postgres (queryRows), not Prisma's $queryRaw: 122-161 against 225-304 µs of the
  // server's CPU a call (the kept 1M-note database, 3,000 calls in turns), at every Create taken in.
  const [row] = await queryRows<{
    id: bigint | null;
    followers_url: string | null;
    fetched_at: Date | null;
    deleted_at: Date | null;
    followed: boolean;
    stored: bigint | null;
    deleted: boolean;
  }>(
    db,
    Prisma.sql`
    SELECT a.id, a.followers_url, a.fetched_at, a.deleted_at,
      a.id IS NOT NULL AND EXISTS (
        SELECT FROM follows f JOIN accounts l ON l.id = f.follower_id AND l.host IS NULL WHERE f.followee_id = a.id
      ) AS followed,
      (SELECT n.id FROM notes n WHERE n.uri = ${note.href}) AS stored,
      ${overtakenSql("deleted-note", note)} AS deleted
    FROM (SELECT) AS one LEFT JOIN accounts a ON a.uri = ${author.href} AND a.host IS NOT NULL`,
  );
  return {
    author:
      row.id === null
        ? null
        : { id: row.id, followersUrl: row.followers_url, fetchedAt: row.fetched_at, deletedAt: row.deleted_at },
    followed: row.followed,
    stored: row.stored,
    deleted: row.deleted,
  };
}

function followedHere(ctx: Context<FederationData>, author: Pick<Account, "id">): Promise<boolean> {
  return ctx.data.db.follow
    .findFirst({ where: { followeeId: author.id, follower: { host: null } }, select: { followerId: true } })
    .then((follow) => follow !== null);
}

/**
 * Whether a local account may care about `object`: its author followed (`followed`, when already
 * known), a local account addressed, mentioned or replied to.
 */
async function concernsLocal(
  ctx: Context<FederationData>,
  author: Pick<Account, "id">,
  object: NoteLike,
  followed?: boolean,
): Promise<boolean> {
  if (followed ?? (await followedHere(ctx, author))) return true;
  if ((await localAddressees(ctx, object)).length > 0) return true;
  if (object.replyTargetId && (await localNote(ctx, object.replyTargetId))) return true;
  const quoted = quoteOf(object);
  return quoted !== null && (await localNote(ctx, quoted)) !== null;
}

/** The id of local account actor `uri`, when it is one of this server's. */
function localAccountId(ctx: Context<FederationData>, uri: URL): bigint | undefined {
  const parsed = ctx.parseUri(uri);
  return parsed?.type === "actor" ? parseSnowflake(parsed.identifier) : undefined;
}

/** The local accounts `object` addresses (to, cc) and mentions, in that order, each once; bounded. */
async function localAddressees(ctx: Context<FederationData>, object: NoteLike): Promise<bigint[]> {
  const ids = new Set<bigint>();
  const add = (uri: URL | null | undefined) => {
    const id = uri && ids.size < MAX_MENTIONED ? localAccountId(ctx, uri) : undefined;
    if (id !== undefined) ids.add(id);
  };
  for (const uri of [...object.toIds, ...object.ccIds]) add(uri);
  let seen = 0;
  // A mention is embedded: tags given only by their URL are not fetched.
  for await (const tag of object.getTags(NO_FETCH)) {
    if (++seen > MAX_TAGS || ids.size >= MAX_MENTIONED) break;
    if (tag instanceof Mention) add(tag.href);
  }
  if (ids.size === 0) return [];
  const alive = await ctx.data.db.account.findMany({
    where: { id: { in: [...ids] }, host: null, deletedAt: null },
    select: { id: true },
  });
  const found = new Set(alive.map((a) => a.id));
  return [...ids].filter((id) => found.has(id));
}

/**
 * The note's attached Documents (Image, Video, Audio too) with an http(s) URL, in order, at most as
 * many as a local note may have; given only by their URL, not fetched. Kept at their origin.
 */
async function attachmentsOf(object: NoteLike): Promise<RemoteFile[]> {
  const files: RemoteFile[] = [];
  const blurhashes = blurhashesOf(object);
  for await (const item of object.getAttachments(NO_FETCH)) {
    if (files.length >= LIMITS.attachments) break;
    if (!(item instanceof Document) || item instanceof Page) continue;
    const url = item.url instanceof Link ? item.url.href : item.url;
    if (!(url instanceof URL) || (url.protocol !== "https:" && url.protocol !== "http:")) continue;
    const name = displayText(
      item.name?.toString() || decodeURIComponent(url.pathname.split("/").pop() ?? "") || "file",
      MAX_FILE_NAME,
    ).replace(/[\t\n]+/g, " ");
    files.push({
      url: url.href,
      name,
      mime: /^[\w.+-]+\/[\w.+-]+$/.test(item.mediaType ?? "") ? (item.mediaType as string) : "application/octet-stream",
      blurhash: blurhashes.get(url.href) ?? "",
      nsfw: object.sensitive === true || item.sensitive === true,
    });
  }
  return files;
}

function isPublic(uri: URL): boolean {
  return uri.href === PUBLIC_COLLECTION.href || uri.href === "as:Public" || uri.href === "Public";
}

/**
 * The visibility an object's addressing says, the mapping of local notes (docs/federation.md#notes) read backwards:
 * as:Public in `to` is public, in `cc` home; the author's followers collection (without
 * as:Public) is followers; anything else direct (null: the caller picks its local recipient).
 */
function visibilityOf(author: Pick<Account, "followersUrl">, tos: URL[], ccs: URL[]): Visibility | null {
  if (tos.some(isPublic)) return "public";
  if (ccs.some(isPublic)) return "home";
  if (author.followersUrl && [...tos, ...ccs].some((uri) => uri.href === author.followersUrl)) return "followers";
  return null;
}

function quoteOf(object: NoteLike): URL | null {
  return (object instanceof Page ? null : (object.quoteUrl ?? object.quoteId)) ?? null;
}

interface Target {
  id: bigint;
  visibility: Visibility;
}

/** Local note `uri` of this server, if it exists. */
async function localNote(ctx: Context<FederationData>, uri: URL): Promise<Target | null> {
  const parsed = ctx.parseUri(uri);
  if (parsed?.type !== "object" || parsed.class !== Note) return null;
  const id = parseSnowflake(parsed.values.id ?? "");
  if (id === undefined) return null;
  return ctx.data.db.note.findUnique({ where: { id }, select: { id: true, visibility: true } });
}

/**
 * The note `uri` names: this server's, one stored, or (while `fetches` has some left) fetched
 * signed as the instance actor and stored. Null when it cannot be had or kept.
 */
async function resolveNote(ctx: Context<FederationData>, uri: URL, fetches: Fetches): Promise<Target | null> {
  if (uri.origin === new URL(ctx.data.config.publicUrl).origin) return localNote(ctx, uri);
  const stored = await ctx.data.db.note.findUnique({
    where: { uri: uri.href },
    select: { id: true, visibility: true },
  });
  if (stored || fetches.left <= 0) return stored;
  fetches.left--;
  // lookupObject refuses an object whose id is of another origin than its URL.
  const object = await ctx.lookupObject(uri.href, await loaders(ctx)).catch(() => null);
  if (!isNoteLike(object) || object.id?.href !== uri.href) return null;
  const author = await authorOf(ctx, object);
  if (!author) return null;
  const id = await storeObject(ctx, object, author, fetches);
  return id === null ? null : ctx.data.db.note.findUnique({ where: { id }, select: { id: true, visibility: true } });
}

/**
 * `object` by `author` stored (once: by its id), its parent and quoted note resolved with what
 * is left of the `fetches` of the activity that brought it. The stored id, or null when no local account may read it.
 * `stored`, when given, is the id stored for the object's id, read already (null: none).
 */
async function storeObject(
  ctx: Context<FederationData>,
  object: NoteLike,
  author: Pick<Account, "id" | "followersUrl">,
  fetches: Fetches,
  stored?: bigint | null,
): Promise<bigint | null> {
  const uri = (object.id as URL).href;
  const already =
    stored !== undefined
      ? stored
      : ((await ctx.data.db.note.findUnique({ where: { uri }, select: { id: true } }))?.id ?? null);
  if (already !== null) return already;
  const addressees = await localAddressees(ctx, object);
  let visibility = visibilityOf(author, object.toIds, object.ccIds);
  let sendToId: bigint | null = null;
  if (visibility === null) {
    // Direct: to the first local account it addresses; nobody here may read one that names none.
    if (addressees.length === 0) return null;
    visibility = "direct";
    sendToId = addressees[0];
  }
  const parent = object.replyTargetId ? await resolveNote(ctx, object.replyTargetId, fetches) : null;
  const quotedUri = quoteOf(object);
  const quoted = quotedUri ? await resolveNote(ctx, quotedUri, fetches) : null;
  const text = textOf(object);
  const url = object.url instanceof URL ? object.url.href : (object.url?.href?.href ?? null);
  return storeRemoteNote(ctx.data, {
    uri,
    url: url && /^https?:/.test(url) ? url : uri,
    authorId: author.id,
    ...text,
    visibility,
    sendToId,
    replyToId: parent?.id ?? null,
    // Only a note everyone may see is quoted, as a local quote is.
    renoteId: quoted && (quoted.visibility === "public" || quoted.visibility === "home") ? quoted.id : null,
    mentionedIds: addressees,
    attachments: await attachmentsOf(object),
  });
}
