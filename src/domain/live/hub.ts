// The live streams of one instance (CONTRACT 12) and what PostgreSQL announces to it on
// murmur_live (migration 20261124200000_live_events), whichever instance wrote it. Each
// announced note is loaded once, and one statement asks every stream's timeline rule of it at
// once (the timelines' own rules, a viewer per row), however many streams are open.

import { Prisma } from "../../db/client.ts";
import { Listener } from "../../db/listener.ts";
import { PUBLIC_ACCOUNT_SELECT } from "../accounts/service.ts";
import type { Services } from "../context.ts";
import { DomainError } from "../errors.ts";
import { listRule } from "../lists/service.ts";
import { ACCOUNT_CHANGES_CHANNEL } from "../sessions/caller-cache.ts";
import { notesSelectedBy } from "../timelines/page.ts";
import { globalRule, homeRule } from "../timelines/service.ts";
import type { EndReason, LiveStream } from "./stream.ts";

const LIVE_CHANNEL = "murmur_live";
/** Streams one account may hold open on an instance, and one IP without credentials. */
export const MAX_STREAMS = 20;

export class LiveHub {
  private readonly streams = new Set<LiveStream>();
  private readonly listener: Listener;
  // Announcements are handled one after another: each stream gets its events in commit order.
  private handling = Promise.resolve();
  private readonly pending: string[] = [];

  constructor(
    private readonly services: Services,
    databaseUrl: string,
  ) {
    this.listener = new Listener(
      databaseUrl,
      [LIVE_CHANNEL, ACCOUNT_CHANGES_CHANNEL],
      {
        notification: (channel, payload) => this.heard(channel, payload),
        // Whatever was announced meanwhile is lost to the streams: they end, and their clients
        // resume with Last-Event-ID, missing nothing.
        lost: () => this.endAll("missed"),
      },
      services.log,
    );
    this.listener.listen();
  }

  /** Streams open now. */
  get open(): number {
    return this.streams.size;
  }

  /** Adds a stream, unless its account (or, without one, its IP) holds MAX_STREAMS here already. */
  add(stream: LiveStream): void {
    const same = [...this.streams].filter((s) =>
      stream.viewer ? s.viewer?.id === stream.viewer.id : !s.viewer && s.ip === stream.ip,
    );
    if (same.length >= MAX_STREAMS) throw new DomainError("RATE_LIMITED");
    this.streams.add(stream);
    stream.onEnd(() => this.streams.delete(stream));
  }

  endAll(reason: EndReason): void {
    for (const stream of this.streams) stream.end(reason);
  }

  async close(): Promise<void> {
    this.endAll("shutdown");
    await this.listener.close();
    await this.handling;
  }

  private heard(channel: string, payload: string): void {
    if (!this.streams.size) return;
    this.pending.push(channel === LIVE_CHANNEL ? payload : `a:${payload}`);
    if (this.pending.length === 1) this.handling = this.handling.then(() => this.handlePending());
  }

  /**
   * What was heard while the last batch was handled, in one go: one announcement a note, at 50
   * notes/s, would each wait for the statements of those before it. Runs of the same kind are
   * merged (notes created one by one are asked of together), in the order heard.
   */
  private async handlePending(): Promise<void> {
    const batch = this.pending.splice(0);
    const runs: { kind: string; items: string[] }[] = [];
    for (const payload of batch) {
      const kind = payload[0];
      const items = payload.slice(2).split(",");
      const last = runs.at(-1);
      if (last?.kind === kind) last.items.push(...items);
      else runs.push({ kind, items });
    }
    for (const { kind, items } of runs) {
      await this.announced(kind, items).catch((err) => this.services.log.warn({ err }, "live update not delivered"));
    }
  }

  private async announced(kind: string, items: string[]): Promise<void> {
    switch (kind) {
      case "n":
        return this.notesCreated(items.map(BigInt));
      case "d":
        return this.notesDeleted(items.map((item) => item.split(".")));
      case "N":
        return this.notificationsCreated(items.map((item) => item.split(".").map(BigInt)));
      case "A":
        return this.announcementsCreated(items.map(BigInt));
      case "a":
        for (const item of items) await this.accountChanged(item);
    }
  }

  private of(kind: LiveStream["kind"]): LiveStream[] {
    return [...this.streams].filter((s) => s.kind === kind);
  }

  private async notesCreated(ids: bigint[]): Promise<void> {
    const [global, home, lists] = [this.of("global"), this.of("home"), this.of("list")];
    if (!global.length && !home.length && !lists.length) return;
    const homeViewers = [...new Set(home.map((s) => s.viewer?.id as bigint))];
    const viewer = { id: Prisma.sql`s.v` };
    const rows = await this.services.db.$queryRaw<{ id: bigint; global: boolean; home: bigint[]; lists: number[] }[]>`
      SELECT n.id, (${globalRule(undefined)}) AS global,
        ARRAY(SELECT s.v FROM unnest(${homeViewers}::bigint[]) AS s(v) WHERE ${homeRule(viewer, undefined)}) AS home,
        ARRAY(SELECT s.k FROM unnest(${lists.map((s) => s.viewer?.id)}::bigint[], ${lists.map((s) => s.listId)}::bigint[],
            ${lists.map((_, k) => k)}::int[]) AS s(v, l, k)
          WHERE ${listRule(Prisma.sql`s.l`, viewer)}) AS lists
      FROM notes n WHERE n.id = ANY(${ids}::bigint[]) ORDER BY n.id`;
    const shown = rows.filter((r) => r.global || r.home.length || r.lists.length);
    if (!shown.length) return;
    const notes = await notesSelectedBy(
      { ...this.services, caller: {} },
      Prisma.sql`SELECT n.* FROM notes n WHERE n.id = ANY(${shown.map((r) => r.id)}::bigint[])`,
    );
    const byId = new Map(notes.map((n) => [n.id, n]));
    for (const row of shown) {
      const note = byId.get(row.id);
      if (!note) continue;
      const event = { event: "note", id: row.id, note } as const;
      if (row.global) for (const s of global) s.push(event);
      const viewers = new Set(row.home);
      for (const s of home) if (viewers.has(s.viewer?.id as bigint)) s.push(event);
      for (const k of row.lists) lists[k].push(event);
    }
  }

  /**
   * A deleted note's row is gone, so no rule can be asked of it: its id goes to every stream
   * that may have shown it, global streams for a public note, every home and list stream unless
   * it was direct (an id tells nothing of a note one did not see).
   */
  private async notesDeleted(items: string[][]): Promise<void> {
    for (const [id, , visibility] of items) {
      const event = { event: "delete", id: BigInt(id) } as const;
      if (visibility === "direct") continue;
      for (const s of this.streams) {
        if (s.kind === "home" || s.kind === "list" || (s.kind === "global" && visibility === "public")) s.push(event);
      }
    }
  }

  private async notificationsCreated(items: bigint[][]): Promise<void> {
    const streams = this.of("notifications");
    const recipients = new Set(streams.map((s) => s.viewer?.id));
    const ids = items.filter(([, recipient]) => recipients.has(recipient)).map(([id]) => id);
    if (!ids.length) return;
    const found = await this.services.db.notification.findMany({
      where: { id: { in: ids } },
      orderBy: { id: "asc" },
      include: { actor: { select: PUBLIC_ACCOUNT_SELECT } },
    });
    for (const notification of found) {
      const event = { event: "notification", id: notification.id, notification } as const;
      for (const s of streams) if (s.viewer?.id === notification.recipientId) s.push(event);
    }
  }

  private async announcementsCreated(ids: bigint[]): Promise<void> {
    const streams = this.of("notifications");
    if (!streams.length) return;
    const found = await this.services.db.announcement.findMany({ where: { id: { in: ids } }, orderBy: { id: "asc" } });
    for (const a of found) {
      const event = { event: "announcement", id: a.id, announcement: { ...a, unread: true } } as const;
      for (const s of streams) s.push(event);
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
