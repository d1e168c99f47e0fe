// What Murmur does with the activities its inboxes take (docs/federation.md). Fedify has checked
// each one's signature against its actor before a listener runs, and drops an activity id already
// handled (its idempotence records are in federation_kv); the listeners only read what the activity
// says and hand it to the domain.
import type {
  Context,
  InboxErrorHandler,
  InboxListener,
  InboxListenerSetters,
  MessageQueue,
  MessageQueueEnqueueOptions,
  MessageQueueListenOptions,
  SharedInboxKeyDispatcher,
  UnverifiedActivityHandler,
} from "@fedify/fedify";
import { type Activity, Delete, isActor, Update } from "@fedify/fedify/vocab";
import { deleteRemoteAccount } from "../domain/accounts/deletion.ts";
import type { FederationData } from "./data.ts";
import { listenToFlags } from "./flags.ts";
import { listenToFollows } from "./follows.ts";
import { idempotenceKey } from "./kv-store.ts";
import { listenToReactions } from "./reactions.ts";
import { storeActor } from "./remote-accounts.ts";
import { listenToNotes, noteDeleted, noteUpdated } from "./remote-notes.ts";
import { safeFetch } from "./safe-fetch.ts";

export function listenToInbox(setters: InboxListenerSetters<FederationData>): void {
  const listeners = new BlockedServersIgnored(setters);
  listenToFollows(listeners);
  listenToFlags(listeners);
  listenToNotes(listeners);
  listenToReactions(listeners);
  listeners
    // An actor's new profile (docs/federation.md#remote-accounts), for an account stored here.
    .on(Update, async (ctx, update) => {
      if (!update.actorId) return;
      // Else a note's edit (src/federation/remote-notes.ts).
      if (update.objectId?.href !== update.actorId.href) return void (await noteUpdated(ctx, update));
      if (!(await storedAccountOf(ctx, update.actorId))) return;
      const actor = await update.getObject({ suppressError: true });
      if (isActor(actor) && actor.id?.href === update.actorId.href) await storeActor(ctx, actor);
    })
    // An actor deleted on its server: everything of it here goes, as a local deletion does.
    .on(Delete, async (ctx, deletion) => {
      if (!deletion.actorId) return;
      // Else a note's deletion (src/federation/remote-notes.ts).
      if (deletion.objectId?.href !== deletion.actorId.href) return void (await noteDeleted(ctx, deletion));
      const account = await storedAccountOf(ctx, deletion.actorId);
      if (account) await deleteRemoteAccount(ctx.data, account.id);
    })
    // A deleted actor's key goes with its actor (404 or 410), so its own Delete cannot be verified
    // unless the key was kept from before. Such a Delete is taken once this server has seen the actor
    // gone for itself: the activity alone proves nothing, anyone may send it.
    .onUnverifiedActivity(async (ctx, activity, reason) => {
      if (reason.type !== "keyFetchError" || !(activity instanceof Delete) || !activity.actorId) return;
      if (activity.objectId?.href !== activity.actorId.href) return;
      const account = await storedAccountOf(ctx, activity.actorId);
      if (!account || !(await gone(ctx, activity.actorId))) return;
      await deleteRemoteAccount(ctx.data, account.id);
      return new Response(null, { status: 202 });
    });
}

/**
 * `setters` whose listeners ignore an activity of a blocked server's actor (docs/federation.md#moderation).
 * The inbox gate refuses a POST signed with a blocked server's key before its body is read; this is
 * for an activity of its actor that came some other way (a signature of another server's key,
 * which Fedify takes when the activity carries its own proof), and costs a lookup in memory.
 */
class BlockedServersIgnored implements InboxListenerSetters<FederationData> {
  constructor(private readonly setters: InboxListenerSetters<FederationData>) {}

  // biome-ignore lint/suspicious/noExplicitAny: Fedify's own signature for an activity class
  on<T extends Activity>(type: new (...args: any[]) => T, listener: InboxListener<FederationData, T>): this {
    this.setters.on(type, async (ctx, activity) => {
      if (!(await blocked(ctx, activity))) await listener(ctx, activity);
    });
    return this;
  }

  onError(handler: InboxErrorHandler<FederationData>): this {
    this.setters.onError(handler);
    return this;
  }

  onUnverifiedActivity(handler: UnverifiedActivityHandler<FederationData>): this {
    this.setters.onUnverifiedActivity(async (ctx, activity, reason) =>
      (await blocked(ctx, activity)) ? undefined : handler(ctx, activity, reason),
    );
    return this;
  }

  setSharedKeyDispatcher(dispatcher: SharedInboxKeyDispatcher<FederationData>): this {
    this.setters.setSharedKeyDispatcher(dispatcher);
    return this;
  }

  withIdempotency(strategy: Parameters<InboxListenerSetters<FederationData>["withIdempotency"]>[0]): this {
    this.setters.withIdempotency(strategy);
    return this;
  }
}

async function blocked(ctx: Context<FederationData>, activity: Activity): Promise<boolean> {
  const host = activity.actorId?.host;
  return host !== undefined && (await ctx.data.instances.of(host)) === "block";
}

/** Whether actor `uri` answers 404 or 410 (a Tombstone) to this server's own request. */
async function gone(ctx: Context<FederationData>, uri: URL): Promise<boolean> {
  const response = await safeFetch(new Request(uri, { headers: { accept: "application/activity+json" } }), {
    allowPrivate: ctx.data.config.federationAllowPrivate,
  }).catch(() => undefined);
  await response?.body?.cancel();
  return response?.status === 404 || response?.status === 410;
}

/** The remote account stored for the actor `uri`, deleted or not. */
export function storedAccountOf(ctx: Context<FederationData>, uri: URL) {
  return ctx.data.db.account.findUnique({ where: { uri: uri.href } });
}

/**
 * `queue` with each received activity's message keyed by the activity's id (the queue's ordering
 * key), so that copies of one activity (its server sending it again, or to the personal and the
 * shared inbox) are handled one after the other. Fedify reads its idempotence record before a
 * listener runs and writes it after: copies handled side by side all ran, and an Accept went out
 * once per copy; one after the other, the later ones find the record and are dropped.
 */
export class ActivityKeyedQueue implements MessageQueue {
  readonly nativeRetrial?: boolean;
  readonly enqueueMany?: MessageQueue["enqueueMany"];
  readonly getDepth?: MessageQueue["getDepth"];

  constructor(private readonly queue: MessageQueue) {
    this.nativeRetrial = queue.nativeRetrial;
    // Fedify enqueues many only what it sends; a received activity comes one at a time (enqueue).
    if (queue.enqueueMany) this.enqueueMany = queue.enqueueMany.bind(queue);
    if (queue.getDepth) this.getDepth = queue.getDepth.bind(queue);
  }

  enqueue(message: unknown, options?: MessageQueueEnqueueOptions): Promise<void> {
    const id = receivedActivityId(message);
    if (id === undefined || options?.orderingKey) return this.queue.enqueue(message, options);
    return this.queue.enqueue(withIdempotenceRead(message, id), { ...options, orderingKey: `received ${id}` });
  }

  listen(handler: (message: unknown) => Promise<void> | void, options?: MessageQueueListenOptions): Promise<void> {
    return this.queue.listen(handler, options);
  }
}

/**
 * `message` naming the key of the idempotence record Fedify reads before its listener runs (as
 * Fedify keys it: the origin the activity came to and its id), for the queue's claim to read with
 * the message (src/federation/message-queue.ts). A key that is not the one Fedify reads (an id
 * that parses to another href) only costs that read's statement back.
 */
function withIdempotenceRead(message: unknown, id: string): unknown {
  const { baseUrl } = message as { baseUrl?: unknown };
  if (typeof baseUrl !== "string" || !URL.canParse(baseUrl) || !URL.canParse(id)) return message;
  return { ...(message as object), carriedReads: [idempotenceKey(new URL(baseUrl).origin, new URL(id).href)] };
}

/** The id of the activity a queued message of a received activity holds (as it came, or compacted). */
function receivedActivityId(message: unknown): string | undefined {
  const { type, activity } = (message ?? {}) as { type?: unknown; activity?: Record<string, unknown> | null };
  if (type !== "inbox" || typeof activity !== "object" || activity === null) return undefined;
  const id = activity.id ?? activity["@id"];
  return typeof id === "string" ? id : undefined;
}
