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
// after it (so one always follows each commit), whatever the rate of writes.

import type { Logger } from "pino";
import { type Db, Prisma, queryRows } from "../../db/client.ts";

/** Set in a write's statement: its journal triggers leave the wake to wakeLiveHubs. */
export const WAKES_LIVE_SQL = Prisma.sql`set_config('murmur.wakes_live', 'on', true) = 'on'`;

const states = new WeakMap<object, { sending: boolean; again: boolean }>();

/** Wakes every instance's hub (this one's too, through its listener): after the write's commit. */
export function wakeLiveHubs(db: Db, log: Logger): void {
  const state = states.get(db) ?? { sending: false, again: false };
  states.set(db, state);
  if (state.sending) {
    state.again = true;
    return;
  }
  state.sending = true;
  const send = (): void => {
    state.again = false;
    queryRows(db, Prisma.sql`SELECT pg_notify('murmur_live', '')`)
      // Unwoken, the hubs read the journal at their next poll (src/domain/live/hub.ts).
      .catch((err: unknown) => log.warn({ err }, "live hubs not woken"))
      .finally(() => {
        if (state.again) send();
        else state.sending = false;
      });
  };
  send();
}
