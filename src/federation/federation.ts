// Murmur's ActivityPub side (docs/federation.md): Fedify's federation object with WebFinger,
// NodeInfo 2.1, a Person per local account, the instance actor and their keys.
import fs from "node:fs";
import {
  type Context,
  createFederation,
  type Federation,
  InProcessMessageQueue,
  type KvStore,
  kvCache,
  MemoryKvStore,
  type MessageQueue,
} from "@fedify/fedify";
import { Application, Endpoints, Person, type Recipient, Tombstone } from "@fedify/fedify/vocab";
import { parseSnowflake } from "../db/snowflake.ts";
import { keyOf } from "../domain/accounts/rules.ts";
import type { Account } from "../generated/prisma/client.ts";
import type { AppServices } from "../services.ts";
import { localPerson } from "./actor.ts";
import { contextsBoundedPerHost } from "./context-hosts.ts";
import type { FederationData } from "./data.ts";
import { deliveryOptions, GuardedQueue } from "./delivery.ts";
import { safeDocumentLoader, staticPreloaded } from "./document-loader.ts";
import { expandOnce } from "./expanded-once.ts";
import { DeliveryRecorder } from "./hosts.ts";
import { ActivityKeyedQueue, listenToInbox } from "./inbox.ts";
import { inlineCryptoOnce } from "./inline-crypto.ts";
import { actorKeysOf, INSTANCE_ACTOR, instanceSigner } from "./keys.ts";
import { PostgresMessageQueue } from "./message-queue.ts";
import { fedifyMeters } from "./meters.ts";
import { registerNotes } from "./notes.ts";
import { parseActivitiesOnce } from "./parsed-activities.ts";
import { parseKeysOnce } from "./parsed-keys.ts";
import { remoteRecipient } from "./remote-accounts.ts";

export type { FederationData } from "./data.ts";

/**
 * Actor ids are `/accounts/<account id>`: an account's id never changes (its name could one day)
 * and that path already names the account for REST clients (docs/http.md#account-paths), so the
 * id is the same resource under content negotiation. Collections sit under it the same way.
 */
export const PATHS = {
  actor: "/accounts/{identifier}",
  inbox: "/accounts/{identifier}/inbox",
  sharedInbox: "/inbox",
  outbox: "/accounts/{identifier}/outbox",
  followers: "/accounts/{identifier}/followers",
  following: "/accounts/{identifier}/following",
  nodeInfo: "/nodeinfo/2.1",
} as const;

/** A page of a followers or following collection. */
const PAGE_SIZE = 40;

/** How long NodeInfo's counts are reused: crawlers ask often, and counting notes reads them all. */
const NODEINFO_TTL_MS = 60_000;

const VERSION = (
  JSON.parse(fs.readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }
).version;

export interface FederationStores {
  kv?: KvStore;
  queue?: MessageQueue;
}

export function createMurmurFederation(
  services: AppServices,
  stores: FederationStores = {},
): Federation<FederationData> {
  const { config } = services;
  const keys = actorKeysOf(services.db);
  // Remote keys kept by the store parsed once (src/federation/parsed-keys.ts), JSON-LD documents
  // expanded once (src/federation/expanded-once.ts), and a received activity parsed once before
  // its POST is answered (src/federation/parsed-activities.ts); digests in this thread, not Node's
  // pool (src/federation/inline-crypto.ts).
  parseKeysOnce();
  expandOnce();
  parseActivitiesOnce();
  inlineCryptoOnce();
  const kv = stores.kv ?? new MemoryKvStore();
  const queue = stores.queue ?? new InProcessMessageQueue();
  // Every fetch goes through Murmur's guarded loaders (src/federation/document-loader.ts); Fedify
  // takes neither allowPrivateAddress nor userAgent with loaders of one's own: they carry both.
  const loading = {
    allowPrivate: config.federationAllowPrivate,
    userAgent: { software: `Murmur/${VERSION}`, url: new URL(config.publicUrl) },
    // Nothing is fetched of, or delivered to, a server blocked here (docs/federation.md#moderation).
    blocked: async (host: string) => (await services.instances.of(host)) === "block",
  };
  const contextLoader = contextsBoundedPerHost(safeDocumentLoader(loading), config.federationInboxFetchRate);
  const documentLoader = staticPreloaded(kvCache({ loader: safeDocumentLoader(loading), kv }));
  const cachedContextLoader = staticPreloaded(kvCache({ loader: contextLoader, kv }));
  const federation = createFederation<FederationData>({
    kv,
    // Deliveries POST through the guarded fetch too (src/federation/delivery.ts); copies of one
    // received activity are handled one at a time, so once (src/federation/inbox.ts).
    // Each delivery's outcome is counted and kept per host (src/federation/hosts.ts).
    queue: new GuardedQueue(new ActivityKeyedQueue(queue), {
      ...loading,
      recorder: new DeliveryRecorder(services),
      // At most this many at once to one server (src/federation/host-slots.ts).
      hostConcurrency: config.federationHostConcurrency,
      // What waits for a paused server is held as one (GuardedQueue).
      ...(queue instanceof PostgresMessageQueue && {
        postpone: (prefix: string, delayMs: number) => queue.postpone("inbox", prefix, delayMs),
      }),
    }),
    // What Fedify counts of inbox activities goes to /metrics (src/federation/meters.ts).
    meterProvider: fedifyMeters(services.metrics),
    // Started by whoever runs it (src/federation/mount.ts), with a signal that stops it at shutdown.
    manuallyStartQueue: true,
    // Ids are built on PUBLIC_URL whatever Host a request came with (a proxy in front).
    origin: config.publicUrl,
    // Unsigned fetches are cached in the key-value store as Fedify's own loader's are. Fedify asks
    // for loaders for every context it makes (two or more an inbox activity), and kvCache builds its
    // rules (a URLPattern) each time it is called: ~6% of the server's CPU taking notes in
    // (bench/README.md, "Federation at scale"), so each is built once.
    documentLoaderFactory: () => documentLoader,
    // Contexts from one host bounded a minute, whoever names them (src/federation/context-hosts.ts).
    contextLoaderFactory: () => cachedContextLoader,
    authenticatedDocumentLoaderFactory: (identity) => safeDocumentLoader({ ...loading, identity }),
    ...deliveryOptions(config, services.log),
  });

  /**
   * An account of this server by actor identifier, deleted ones too (their tombstone); a remote
   * account's id is no actor here (its actor is on its server).
   */
  const accountOf = async (ctx: Context<FederationData>, identifier: string): Promise<Account | null> => {
    const id = parseSnowflake(identifier);
    if (id === undefined) return null;
    return ctx.data.db.account.findUnique({ where: { id, host: null } });
  };

  federation
    .setActorDispatcher(PATHS.actor, async (ctx, identifier) => {
      if (identifier === INSTANCE_ACTOR) return instanceActor(ctx);
      const account = await accountOf(ctx, identifier);
      if (!account) return null;
      // Deleted: 410 Gone with a Tombstone, here and at WebFinger.
      if (account.deletedAt) return new Tombstone({ id: ctx.getActorUri(identifier), formerType: Person });
      return localPerson(ctx, account);
    })
    .setKeyPairsDispatcher(async (ctx, identifier) => {
      if (identifier !== INSTANCE_ACTOR && !(await accountOf(ctx, identifier))) return [];
      return keys.pairsOf(identifier);
    })
    .mapHandle(async (ctx, username) => {
      const account = await ctx.data.db.account.findUnique({
        where: { nameKey: keyOf(username), host: null },
        select: { id: true },
      });
      if (account) return account.id.toString();
      // The instance actor's handle is the server's host name, as Mastodon's is.
      return username === new URL(config.publicUrl).hostname ? INSTANCE_ACTOR : null;
    });

  // What each activity does: src/federation/inbox.ts. An unsigned one is refused (401).
  const listeners = federation
    .setInboxListeners(PATHS.inbox, PATHS.sharedInbox)
    // Fetches made while handling the shared inbox are signed as the instance actor.
    .setSharedKeyDispatcher(instanceSigner)
    // Fedify checks an activity's idempotence record twice: when its POST comes, and before its
    // listener runs from the queue. Only the second is ever written (as the queue handles it, under
    // a key of its own), so the first, one read of the key-value store every POST, could never find
    // one: skipped (null: no record). Copies of one activity are still handled once, by the queue's
    // check (ActivityKeyedQueue in src/federation/inbox.ts).
    .withIdempotency(() => null);
  listenToInbox(listeners);

  registerNotes(federation);

  // The outbox collection only counts notes: their activities are sent, not listed (yet).
  federation
    .setOutboxDispatcher(PATHS.outbox, async (ctx, identifier) => {
      const account = await accountOf(ctx, identifier);
      return account && !account.deletedAt ? { items: [] } : null;
    })
    .setCounter(async (ctx, identifier) => {
      const account = await accountOf(ctx, identifier);
      return account && !account.deletedAt ? account.notesCount : null;
    });

  registerFollowCollection(federation, "followers");
  registerFollowCollection(federation, "following");

  let nodeInfoCounts: { at: number; users: number; notes: number } | undefined;
  federation.setNodeInfoDispatcher(PATHS.nodeInfo, async (ctx) => {
    if (!nodeInfoCounts || Date.now() - nodeInfoCounts.at > NODEINFO_TTL_MS) {
      const [users, notes] = await Promise.all([
        ctx.data.db.account.count({ where: { deletedAt: null } }),
        ctx.data.db.note.count(),
      ]);
      nodeInfoCounts = { at: Date.now(), users, notes };
    }
    return {
      software: { name: "murmur", version: VERSION },
      protocols: ["activitypub"],
      usage: { users: { total: nodeInfoCounts.users }, localPosts: nodeInfoCounts.notes, localComments: 0 },
      openRegistrations: true,
    };
  });

  return federation;
}

/** The server's own actor: it signs the server's fetches (docs/federation.md#actors). */
async function instanceActor(ctx: Context<FederationData>): Promise<Application> {
  const [rsa, ed25519] = await ctx.getActorKeyPairs(INSTANCE_ACTOR);
  return new Application({
    id: ctx.getActorUri(INSTANCE_ACTOR),
    preferredUsername: new URL(ctx.data.config.publicUrl).hostname,
    name: ctx.data.config.localHost,
    manuallyApprovesFollowers: true,
    inbox: ctx.getInboxUri(INSTANCE_ACTOR),
    outbox: ctx.getOutboxUri(INSTANCE_ACTOR),
    endpoints: new Endpoints({ sharedInbox: ctx.getInboxUri() }),
    publicKey: rsa.cryptographicKey,
    assertionMethods: [ed25519.multikey],
  });
}

/**
 * A local account's followers or following, newest follow first, 40 a page (as REST pages them,
 * docs/accounts.md#followers). A locked account's lists are only for itself and its followers,
 * whom a remote request cannot be told to be yet: 401 for it. That rule is the request's only
 * (authorize): deliveries to followers go through the same dispatcher and reach them all.
 */
function registerFollowCollection(federation: Federation<FederationData>, which: "followers" | "following"): void {
  const mine = which === "followers" ? "followeeId" : "followerId";
  const theirs = which === "followers" ? "followerId" : "followeeId";
  const account = (ctx: Context<FederationData>, identifier: string) => {
    const id = parseSnowflake(identifier);
    if (id === undefined) return null;
    return ctx.data.db.account.findFirst({ where: { id, deletedAt: null, host: null } });
  };
  const dispatch = async (ctx: Context<FederationData>, identifier: string, cursor: string | null) => {
    const owner = await account(ctx, identifier);
    if (!owner) return null;
    const after = cursor ? parseCursor(cursor) : undefined;
    const rows = await ctx.data.db.follow.findMany({
      where: {
        [mine]: owner.id,
        ...(after && {
          OR: [{ createdAt: { lt: after.at } }, { createdAt: after.at, [theirs]: { lt: after.id } }],
        }),
      },
      orderBy: [{ createdAt: "desc" }, { [theirs]: "desc" }],
      take: PAGE_SIZE,
      select: {
        createdAt: true,
        followerId: true,
        followeeId: true,
        follower: { select: REMOTE_ACTOR_SELECT },
        followee: { select: REMOTE_ACTOR_SELECT },
      },
    });
    const items: Recipient[] = rows.map((row) => {
      const other = row[theirs].toString();
      // A remote account (docs/federation.md#remote-accounts) is its own server's actor.
      const remote = which === "followers" ? row.follower : row.followee;
      return (
        remoteRecipient(remote) ?? {
          id: ctx.getActorUri(other),
          inboxId: ctx.getInboxUri(other),
          endpoints: { sharedInbox: ctx.getInboxUri() },
        }
      );
    });
    const last = rows.at(-1);
    return {
      items,
      nextCursor: rows.length === PAGE_SIZE && last ? `${last.createdAt.getTime()}.${last[theirs]}` : null,
    };
  };
  const setters =
    which === "followers"
      ? federation.setFollowersDispatcher(PATHS.followers, dispatch)
      : federation.setFollowingDispatcher(PATHS.following, async (ctx, identifier, cursor) => {
          const page = await dispatch(ctx, identifier, cursor);
          return page && { ...page, items: page.items.map((item) => item.id as URL) };
        });
  setters
    .setCounter(async (ctx, identifier) => {
      const owner = await account(ctx, identifier);
      return owner ? (which === "followers" ? owner.followersCount : owner.followingCount) : null;
    })
    // No first page for no account: Fedify then asks the dispatcher, whose null is a 404.
    .setFirstCursor(async (ctx, identifier) => ((await account(ctx, identifier)) ? "" : null))
    .authorize(async (ctx, identifier) => !(await account(ctx, identifier))?.locked);
}

const REMOTE_ACTOR_SELECT = { uri: true, inboxUrl: true, sharedInboxUrl: true } as const;

function parseCursor(cursor: string): { at: Date; id: bigint } | undefined {
  const match = /^(\d{1,15})\.(\d{1,20})$/.exec(cursor);
  if (!match) return undefined;
  const id = parseSnowflake(match[2]);
  return id === undefined ? undefined : { at: new Date(Number(match[1])), id };
}
