// A note's (another server's too) and a reaction's statements write their live journal rows
// without a NOTIFY (which would serialize their commits behind one lock) and wake the hubs after
// their commit (src/domain/live/wake.ts, migration 20261127140000); writers that do not say so
// still notify.
import pg from "pg";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDb } from "../src/db/client.ts";
import { wakeLiveHubs } from "../src/domain/live/wake.ts";
import { storeRemoteNote } from "../src/domain/notes/remote.ts";
import * as act from "./support/actions.ts";
import { account, publicRemoteNote } from "./support/fixtures.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
let listener: pg.Client;
let operator: pg.Client;
const heard: string[] = [];
beforeAll(async () => {
  server = await startTestServer();
  listener = new pg.Client({ connectionString: server.databaseUrl });
  operator = new pg.Client({ connectionString: server.databaseUrl });
  await Promise.all([listener.connect(), operator.connect()]);
  listener.on("notification", (n) => heard.push(n.channel));
  await listener.query("LISTEN murmur_live");
});
afterAll(async () => {
  await Promise.all([listener.end(), operator.end()]);
  await server.close();
});

/** The wakes heard while `write` ran and just after it. */
async function wakesOf(write: () => Promise<unknown>): Promise<number> {
  heard.length = 0;
  await write();
  await new Promise((resolve) => setTimeout(resolve, 200));
  await listener.query("SELECT 1");
  return heard.length;
}

describe("waking the live hubs", () => {
  it("a note's transaction does not notify when its statement says the writer will", async () => {
    const author = await account(server, "lw_author");
    const insert = (wakesLive: boolean) => async () => {
      await operator.query("BEGIN");
      if (wakesLive) await operator.query("SELECT set_config('murmur.wakes_live', 'on', true)");
      await operator.query(
        "INSERT INTO notes (id, author_id, content, visibility) VALUES ((SELECT coalesce(max(id), 1000) + 1 FROM notes), $1, 'x', 'public')",
        [author.id],
      );
      await operator.query("COMMIT");
    };
    expect(await wakesOf(insert(false))).toBe(1);
    expect(await wakesOf(insert(true))).toBe(0);
    // The journal has both rows all the same.
    const { rows } = await operator.query(
      "SELECT count(*)::int AS n FROM live_events WHERE kind = 'n' AND ref_id IN (SELECT id FROM notes WHERE author_id = $1)",
      [author.id],
    );
    expect(rows[0].n).toBe(2);
  });

  it("a note and a reaction posted through the server wake the hubs after their commit", async () => {
    const author = await account(server, "lw_poster");
    const reader = await account(server, "lw_reader");
    expect(await wakesOf(() => act.post(server, author, { content: "hello @lw_reader" }))).toBeGreaterThan(0);
    const note = await act.post(server, author, { content: "react" });
    expect(
      await wakesOf(() =>
        server.request("POST", `/notes/${note.id}/reaction`, { token: reader.token, body: { emoji: "👍" } }),
      ),
    ).toBeGreaterThan(0);
  });

  it("another server's notes taken in at once are journaled without a NOTIFY each, and wake the hubs after", async () => {
    const { rows } = await operator.query(
      `INSERT INTO accounts (id, name, name_key, email, email_key, nickname, passphrase_hash, host, uri, inbox_url)
       VALUES (3000000, 'lw_remote', 'lw_remote@remote.example', 'lw@remote.example', 'lw@remote.example', 'r', '',
               'remote.example', 'https://remote.example/users/lw_remote', 'https://remote.example/users/lw_remote/inbox')
       RETURNING id::text`,
    );
    const author = BigInt(rows[0].id);
    const notes = 60;
    let stored: (bigint | null)[] = [];
    let elapsedMs = 0;
    const wakes = await wakesOf(async () => {
      const started = performance.now();
      stored = await Promise.all(
        Array.from({ length: notes }, (_, n) =>
          storeRemoteNote(
            server.services,
            publicRemoteNote(`https://remote.example/notes/lw${n}`, author, `note ${n}`),
          ),
        ),
      );
      elapsedMs = performance.now() - started;
    });
    expect(stored.every((id) => id !== null)).toBe(true);
    // One a WAKE_SPACING_MS (10 ms) at most, and one after the last; each note's own NOTIFY, one a note.
    expect(wakes).toBeGreaterThan(0);
    expect(wakes).toBeLessThanOrEqual(Math.min(notes - 1, Math.ceil(elapsedMs / 10) + 2));
    const journaled = await operator.query(
      "SELECT count(*)::int AS n FROM live_events WHERE kind = 'n' AND ref_id IN (SELECT id FROM notes WHERE author_id = $1)",
      [author],
    );
    expect(journaled.rows[0].n).toBe(notes);
  });

  it("a burst of wakes sends at most one a spacing, and one after the last", async () => {
    const db = createDb(server.databaseUrl, () => {});
    try {
      let elapsedMs = 0;
      const wakes = await wakesOf(async () => {
        const started = performance.now();
        // A write's wake every 0.1 ms for 200 ms, as many writers committing at once would ask.
        while (performance.now() - started < 200) {
          wakeLiveHubs(db, pino({ level: "silent" }));
          await new Promise((resolve) => setImmediate(resolve));
        }
        elapsedMs = performance.now() - started;
      });
      // One a WAKE_SPACING_MS (10 ms) while it lasted, and the one after the last ask; without
      // the spacing, one each NOTIFY's round trip (a few hundred).
      expect(wakes).toBeGreaterThan(0);
      expect(wakes).toBeLessThanOrEqual(Math.ceil(elapsedMs / 10) + 2);
    } finally {
      await db.$disconnect();
    }
  });
});
