// Waking the live hubs after a write that asked its journal triggers not to (bench/README.md "Writes").
//
// A NOTIFY in a transaction serializes its commit: PostgreSQL takes one lock for every notifying
// transaction of the database at pre-commit and holds it through the commit's WAL flush, so
// queue entries are in commit order. Each note and each reaction (their notifications) had
// notified from its own transaction (the live journal's triggers, migration 20261126150000), and
// 32 connections posting as 32 authors spent most of their time waiting on that lock (sampled
// wait events, bench/README.md "Writes"). NOTIFY only wakes the hubs; the journal says what
// happened. So a note's and a reaction's statement sets murmur.wakes_live, their triggers then
// write the journal rows without a NOTIFY, and the writer wakes every instance itself once the
// statement has committed: one NOTIFY at a time per instance, a wake asked for meanwhile sent
// after it (so one always follows each commit), whatever the rate of writes. And at most one a
// WAKE_SPACING_MS: under a burst of writes (a viral note's reactions), each wake is a round trip
// of its own and makes every hub read the journal again, nearly one per write; spaced, a live
// reader waits at most that much longer.

import type { Logger } from "pino";
import { type Db, Prisma, queryRows } from "../../db/client.ts";

/** Set in a write's statement: its journal triggers leave the wake to wakeLiveHubs. */
export const WAKES_LIVE_SQL = Prisma.sql`set_config('murmur.wakes_live', 'on', true) = 'on'`;

const WAKE_SPACING_MS = 10;

const states = new WeakMap<object, { busy: boolean; again: boolean; sentAt: number }>();

/** Wakes every instance's hub (this one's too, through its listener): after the write's commit. */
export function wakeLiveHubs(db: Db, log: Logger): void {
  const state = states.get(db) ?? { busy: false, again: false, sentAt: 0 };
  states.set(db, state);
  // A wake in flight or waiting for its turn: it is sent again after.
  if (state.busy) {
    state.again = true;
    return;
  }
  state.busy = true;
  const untilNext = () => Math.max(0, state.sentAt + WAKE_SPACING_MS - Date.now());
  const send = (): void => {
    state.again = false;
    state.sentAt = Date.now();
    queryRows(db, Prisma.sql`SELECT pg_notify('murmur_live', '')`)
      // Unwoken, the hubs read the journal at their next poll (src/domain/live/hub.ts).
      .catch((err: unknown) => log.warn({ err }, "live hubs not woken"))
      .finally(() => {
        if (state.again) setTimeout(send, untilNext()).unref();
        else state.busy = false;
      });
  };
  const wait = untilNext();
  if (wait > 0) setTimeout(send, wait).unref();
  else send();
}
