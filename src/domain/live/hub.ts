// The live streams of one instance (docs/live.md#fan-out) and the live events' journal that every
// instance reads in the same order (src/domain/live/journal.ts), whichever instance wrote them:
// NOTIFY murmur_live only wakes it. Each note read is loaded once, and one statement asks every
// stream's timeline rule of it at once (the timelines' own rules, a viewer per row), however many
// streams are open.

import { type Db, Prisma, queryRows, withOwnPool } from "../../db/client.ts";
import { Listener } from "../../db/listener.ts";
import { oneOf } from "../../db/one-of.ts";
import { RepeatedFailure } from "../../log.ts";
import { PUBLIC_ACCOUNT_SELECT } from "../accounts/service.ts";
import type { Services } from "../context.ts";
import { DomainError } from "../errors.ts";
import { listMayHaveShown, listRule } from "../lists/service.ts";
import { unfrozenSql } from "../notes/visibility.ts";
import { ACCOUNT_CHANGES_CHANNEL } from "../sessions/caller-cache.ts";
import { notesSelectedBy } from "../timelines/page.ts";
import { globalRule, homeMayHaveShown } from "../timelines/service.ts";
import { BATCH, type JournalEvent, journalHorizon, type Position, pruneJournal, readJournal } from "./journal.ts";
import type { EndReason, LiveEvent, LiveStream } from "./stream.ts";

const LIVE_CHANNEL = "murmur_live";

/**
 * Which streams a new note belongs on: the timelines' rules, a viewer column per stream; home
 * asked of every home stream's viewer at once (homeViewers).
 */
const CREATED = {
  global: globalRule(undefined),
  home: homeViewers,
  list: listRule,
};
/** Which streams may have shown a deleted note. */
const DELETED: typeof CREATED = {
  global: Prisma.sql`n.visibility = 'public'`,
  home: (viewers) =>
    Prisma.sql`ARRAY(SELECT s.v FROM unnest(${viewers}::bigint[]) AS s(v) WHERE ${homeMayHaveShown({ id: Prisma.sql`s.v` })})`,
  list: listMayHaveShown,
};

/**
 * Which of `viewers` have note `n` on their home timeline: homeRule (src/domain/timelines/service.ts)
 * asked of all of them at once, as sets. Asked of each viewer as a row, it probed follows and
 * mutes once per viewer and note: 2,000 probes for two notes to 1,000 home streams at every read
 * (bench/README.md, "Live streams and the timeline, 2026-11-27"). Here the author's followers
 * among them are one scan of follows' (followee_id, follower_id) index, its muters one of mutes'
 * (muted_id). homeRule's audience condition holds for all of these: a note that is not direct is
 * public, home or followers-only, which its author and its followers may all see.
 * test/live-home-rule.test.ts holds the stream to the timeline, case by case.
 */
function homeViewers(viewers: bigint[]): Prisma.Sql {
  return Prisma.sql`CASE WHEN n.visibility <> 'direct' ${unfrozenSql(undefined)} THEN ARRAY(
      (SELECT n.author_id WHERE n.author_id = ANY(${viewers}::bigint[])
        UNION SELECT f.follower_id FROM follows f
        WHERE f.followee_id = n.author_id AND f.follower_id = ANY(${viewers}::bigint[]))
      EXCEPT SELECT m.muter_id FROM mutes m WHERE m.muted_id = n.author_id) ELSE '{}' END`;
}
/** Streams one account may hold open on an instance, and one IP without credentials. */
export const MAX_STREAMS = 20;
/** How soon the journal is read again while an older transaction holds events back. */
const HELD_BACK_MS = 20;
/** How often it is read all the same (a wake-up missed while the listener reconnected). */
const POLL_MS = 1_000;
const PRUNE_MS = 10 * 60_000;
/**
 * Connections of the hub's own: its statements run one after another (LiveHub.serially), and
 * none waits behind the requests that fill the request pool under load.
 */
const POOL_SIZE = 1;

export class LiveHub {
  private readonly streams = new Set<LiveStream>();
  private readonly listener: Listener;
  /**
   * Every event up to here was read and sent to the streams open then; unset while no stream is
   * open (the journal is not read then) until the next one opens.
   */
  private cursor?: Position;
  // Reads, openings and account changes run one after another: each stream gets its events in
  // the journal's order, and a stream opens between two reads, at a known position.
  private work: Promise<unknown> = Promise.resolve();
  private readQueued = false;
  /** When the journal was last read (performance.now()), for config.liveReadSpacingMs. */
  private readAt = Number.NEGATIVE_INFINITY;
  /** The streams the read under way sent events to (counted only under a budget), and how many the last one did. */
  private reached?: Set<LiveStream>;
  private lastReached = 0;
  /** How long the last read took, its socket writes included (ms). */
  private lastTook = 0;
  private readonly timers: NodeJS.Timeout[];
  private readonly failures: RepeatedFailure;
  /** The primary, through the hub's own pool for the journal's reads and the deliveries' statements. */
  private readonly own: { db: Db; end(): Promise<void> };

  constructor(
    private readonly services: Services,
    databaseUrl: string,
  ) {
    this.failures = new RepeatedFailure(services.log, "live events not read");
    this.own = withOwnPool(services.db, databaseUrl, POOL_SIZE);
    this.listener = new Listener(
      databaseUrl,
      [LIVE_CHANNEL, ACCOUNT_CHANGES_CHANNEL],
      {
        notification: (channel, payload) =>
          channel === LIVE_CHANNEL ? this.wake() : void this.serially(() => this.accountChanged(payload)),
        // What was announced while it did not listen is in the journal all the same.
        listening: () => this.wake(),
      },
      services.log,
    );
    this.listener.listen();
    this.timers = [
      setInterval(() => this.wake(), POLL_MS),
      setInterval(
        () => void pruneJournal(services.db).catch((err) => services.log.warn({ err }, "live journal not pruned")),
        PRUNE_MS,
      ),
    ];
    for (const timer of this.timers) timer.unref();
  }

  /** The primary, where the journal is read: a resumed stream's replay is a request's work, on its pool. */
  get db() {
    return this.services.db;
  }

  /** Streams open now. */
  get open(): number {
    return this.streams.size;
  }

  /**
   * Adds a stream, unless its account (or, without one, its IP) holds MAX_STREAMS here already.
   * Returns the position from which it is sent events as they are read: what came before is a
   * resumed stream's replay.
   */
  add(stream: LiveStream): Promise<Position> {
    return this.serially(async () => {
      const same = [...this.streams].filter((s) =>
        stream.viewer ? s.viewer?.id === stream.viewer.id : !s.viewer && s.ip === stream.ip,
      );
      if (same.length >= MAX_STREAMS) throw new DomainError("RATE_LIMITED");
      const idle = !this.cursor;
      // A fresh stream's snapshot holds the horizon at its opening (its xmin): not asked again.
      this.cursor ??= stream.opened ? { xid: stream.opened.xmin, seq: 0n } : await journalHorizon(this.own.db);
      this.streams.add(stream);
      stream.onEnd(() => {
        this.streams.delete(stream);
        if (!this.streams.size) this.cursor = undefined;
      });
      // The journal was not read while no stream was open: read what came since the horizon.
      // Otherwise it is read already, as events come (a read per opening would queue a burst of
      // openings behind as many reads).
      if (idle) this.wake();
      return this.cursor;
    });
  }

  endAll(reason: EndReason): void {
    for (const stream of this.streams) stream.end(reason);
  }

  async close(): Promise<void> {
    for (const timer of this.timers) clearInterval(timer);
    this.endAll("shutdown");
    await this.listener.close();
    await this.work.catch(() => {});
    await this.own.end();
  }

  private serially<T>(step: () => Promise<T>): Promise<T> {
    const done = this.work.then(step);
    this.work = done.catch(() => {});
    return done;
  }

  /** Reads the journal soon, once however often it is asked meanwhile; not while no stream is open. */
  private wake(): void {
    if (!this.streams.size || this.readQueued) return;
    this.readQueued = true;
    const queue = () =>
      void this.serially(async () => {
        this.readQueued = false;
        const readAt = performance.now();
        this.readAt = readAt;
        // A spaced read may come due after the last stream closed, or the hub did.
        if (!this.streams.size) return;
        // Without a budget (the default) the reads are spaced by liveReadSpacingMs alone: nothing to count.
        if (!this.services.config.liveReadBudgetMs) return this.read();
        this.reached = new Set();
        await this.read();
        // A read that wrote nothing (the once-a-second poll, mostly) leaves the spacing as the last
        // read that wrote set it: counted as none, it let the next burst be read at once.
        if (this.reached.size) this.lastReached = this.reached.size;
        this.reached = undefined;
        // The writes go out as the tick ends (Node corks each response for it): after them.
        setImmediate(() => (this.lastTook = performance.now() - readAt));
      });
    // Spaced, the events of a burst are read together and each stream gets them in one write.
    // Each read writes once to every stream it has events for: a system call in the server and
    // a read in each client, ~8 µs a stream on each side (bench/README.md, "Live streams and the
    // timeline, 2026-11-27 (second)"). The more streams the last read wrote to, the further
    // apart the reads, towards config.liveWritesPerSecond writes a second; but an event waits
    // for its read and then that read's time, so the spacing and the last read's time stay
    // within config.liveReadBudgetMs (off unless set: docs/live.md#fan-out).
    const { liveReadSpacingMs, liveWritesPerSecond, liveReadBudgetMs } = this.services.config;
    const spacing = Math.max(
      liveReadSpacingMs,
      Math.min(liveReadBudgetMs - this.lastTook, (this.lastReached * 1000) / liveWritesPerSecond),
    );
    const wait = this.readAt + spacing - performance.now();
    if (wait > 0) setTimeout(queue, wait).unref();
    else queue();
  }

  /** Sends the events read since the cursor, runs of one kind together, in the journal's order. */
  private async read(): Promise<void> {
    for (;;) {
      if (!this.cursor) return;
      let read: Awaited<ReturnType<typeof readJournal>>;
      try {
        read = await readJournal(this.own.db, this.cursor);
        this.failures.succeeded();
      } catch (err) {
        this.failures.failed(err);
        return;
      }
      const { events, horizon, waiting } = read;
      for (let i = 0; i < events.length; ) {
        let j = i + 1;
        while (j < events.length && events[j].kind === events[i].kind) j++;
        const run = events.slice(i, j);
        await this.announced(run).catch((err) => {
          // Its streams may have missed these events: they end, and their clients resume with
          // Last-Event-ID, whose replay reads them again.
          this.services.log.warn({ err }, "live update not delivered: its streams end, to resume");
          this.endAll("missed");
        });
        if (this.cursor) this.cursor = run[run.length - 1].at;
        i = j;
      }
      if (events.length === BATCH) continue;
      // Every event below the horizon was read.
      if (this.cursor && horizon.xid > this.cursor.xid) this.cursor = horizon;
      if (waiting) setTimeout(() => this.wake(), HELD_BACK_MS).unref();
      return;
    }
  }

  private send(stream: LiveStream, event: LiveEvent): void {
    this.reached?.add(stream);
    stream.push(event);
  }

  private async announced(run: JournalEvent[]): Promise<void> {
    switch (run[0].kind) {
      case "n":
        return this.notesCreated(run);
      case "d":
        return this.notesDeleted(run);
      case "N":
        return this.notificationsCreated(run);
      case "A":
        return this.announcementsCreated(run);
    }
  }

  private of(kind: LiveStream["kind"]): LiveStream[] {
    return [...this.streams].filter((s) => s.kind === kind);
  }

  /**
   * Which streams each note of `notes` (a statement of rows `n`: id, author_id, visibility,
   * send_to_id) belongs on, by the timelines' rules (`created`, or the rules of what they may have
   * shown of a deleted note), for every stream at once.
   */
  private async showing(notes: Prisma.Sql, rules: typeof CREATED) {
    const [global, home, lists] = [this.of("global"), this.of("home"), this.of("list")];
    const shown = new Map<bigint, LiveStream[]>();
    if (!global.length && !home.length && !lists.length) return shown;
    const viewers = [...new Set(home.map((s) => s.viewer?.id as bigint))];
    const viewer = { id: Prisma.sql`s.v` };
    const rows = await queryRows<{ id: bigint; global: boolean; home: bigint[]; lists: number[] }>(
      this.own.db,
      Prisma.sql`
      SELECT n.id, (${rules.global}) AS global,
        ${rules.home(viewers)} AS home,
        ARRAY(SELECT s.k FROM unnest(${lists.map((s) => s.viewer?.id)}::bigint[], ${lists.map((s) => s.listId)}::bigint[],
            ${lists.map((_, k) => k)}::int[]) AS s(v, l, k)
          WHERE ${rules.list(Prisma.sql`s.l`, viewer)}) AS lists
      FROM (${notes}) n`,
    );
    for (const row of rows) {
      const viewers = new Set(row.home);
      const streams = [
        ...(row.global ? global : []),
        ...home.filter((s) => viewers.has(s.viewer?.id as bigint)),
        ...row.lists.map((k) => lists[k]),
      ];
      if (streams.length) shown.set(row.id, streams);
    }
    return shown;
  }

  private async notesCreated(run: JournalEvent[]): Promise<void> {
    const ids = run.map((e) => e.refId);
    const shown = await this.showing(
      Prisma.sql`SELECT * FROM notes WHERE ${oneOf(Prisma.sql`id`, ids, "bigint")}`,
      CREATED,
    );
    if (!shown.size) return;
    const notes = await notesSelectedBy(
      { ...this.services, db: this.own.db, caller: {} },
      Prisma.sql`SELECT n.* FROM notes n WHERE ${oneOf(Prisma.sql`n.id`, [...shown.keys()], "bigint")}`,
    );
    const byId = new Map(notes.map((n) => [n.id, n]));
    for (const { at, refId } of run) {
      const note = byId.get(refId);
      if (!note) continue;
      const event = { event: "note", id: refId, note, at } as const;
      for (const s of shown.get(refId) ?? []) this.send(s, event);
    }
  }

  /**
   * A deleted note's row is gone: what the journal kept of it (its author and visibility) is
   * asked whether each stream may have shown it, so its id goes to no one else.
   */
  private async notesDeleted(run: JournalEvent[]): Promise<void> {
    const [authors, visibilities] = [run.map((e) => e.detail?.split(".")[0]), run.map((e) => e.detail?.split(".")[1])];
    const shown = await this.showing(
      Prisma.sql`
      SELECT d.id, d.author_id, d.visibility, NULL::bigint AS send_to_id
      FROM unnest(${run.map((e) => e.refId)}::bigint[], ${authors}::bigint[], ${visibilities}::text[])
        AS d(id, author_id, visibility)`,
      DELETED,
    );
    for (const { at, refId } of run) {
      const event = { event: "delete", id: refId, at } as const;
      for (const s of shown.get(refId) ?? []) this.send(s, event);
    }
  }

  private async notificationsCreated(run: JournalEvent[]): Promise<void> {
    const streams = this.of("notifications");
    const recipients = new Set(streams.map((s) => s.viewer?.id.toString()));
    const heard = run.filter((e) => e.detail !== null && recipients.has(e.detail));
    if (!heard.length) return;
    const found = await this.services.db.notification.findMany({
      where: { id: { in: heard.map((e) => e.refId) } },
      include: { actor: { select: PUBLIC_ACCOUNT_SELECT } },
    });
    const byId = new Map(found.map((n) => [n.id, n]));
    for (const { at, refId } of heard) {
      const notification = byId.get(refId);
      if (!notification) continue;
      const event = { event: "notification", id: refId, notification, at } as const;
      for (const s of streams) if (s.viewer?.id === notification.recipientId) this.send(s, event);
    }
  }

  private async announcementsCreated(run: JournalEvent[]): Promise<void> {
    const streams = this.of("notifications");
    if (!streams.length) return;
    const found = await this.services.db.announcement.findMany({ where: { id: { in: run.map((e) => e.refId) } } });
    const byId = new Map(found.map((a) => [a.id, a]));
    for (const { at, refId } of run) {
      const a = byId.get(refId);
      if (!a) continue;
      const event = { event: "announcement", id: refId, announcement: { ...a, unread: true }, at } as const;
      for (const s of streams) this.send(s, event);
    }
  }

  /** A frozen or deleted account's streams end at once, and those whose tokens were revoked. */
  private async accountChanged(payload: string): Promise<void> {
    if (!/^[0-9]{1,20}$/.test(payload)) return;
    const id = BigInt(payload);
    const streams = [...this.streams].filter((s) => s.viewer?.id === id);
    if (!streams.length) return;
    const account = await this.services.db.account.findUnique({
      where: { id },
      select: { frozen: true, tokensValidFrom: true },
    });
    for (const s of streams) {
      if (!account || account.frozen) s.end("frozen");
      else if (account.tokensValidFrom && s.issuedAt && s.issuedAt < account.tokensValidFrom) s.end("revoked");
    }
  }
}
