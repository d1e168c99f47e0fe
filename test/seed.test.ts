// The benchmark's seed (`murmur seed`), on a small scale: it writes rows the schema accepts
// (reactions with their ids, counted by the triggers) and the server reads them like any other.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SeedRefused, seed } from "../src/cli/seed.ts";
import { account } from "./support/fixtures.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

describe("seed", () => {
  it("refuses a database holding an account it did not make, writing nothing; a bad passphrase too", async () => {
    await account(server, "realperson");
    const options = { accounts: 120, notes: 2000, passphrase: "seeded-secret" };
    await expect(seed(server.services, server.databaseUrl, options)).rejects.toThrow(SeedRefused);
    await expect(seed(server.services, server.databaseUrl, options)).rejects.toThrow(/1 account seed did not make/);
    await expect(
      seed(server.services, server.databaseUrl, { ...options, passphrase: "short", force: true }),
    ).rejects.toMatchObject({ code: "VULNERABLE_PASSPHRASE" });
    expect(await server.services.db.account.count()).toBe(1);
    expect(await server.services.db.note.count()).toBe(0);
  });

  it("fills accounts, notes and reactions whose counts match, and the timelines serve them", async () => {
    const seeded = await seed(server.services, server.databaseUrl, {
      accounts: 120,
      notes: 2000,
      passphrase: "seeded-secret",
      force: true,
    });
    const db = server.services.db;
    expect(await db.note.count()).toBeGreaterThanOrEqual(2000);
    expect(await db.reaction.count()).toBeGreaterThan(0);
    const [drift] = await db.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM (SELECT note_id, emoji, sum(count) AS kept FROM note_reaction_counts GROUP BY 1, 2) k
      FULL JOIN (SELECT note_id, emoji, count(*) AS rows FROM reactions GROUP BY 1, 2) r USING (note_id, emoji)
      WHERE coalesce(k.kept, 0) <> coalesce(r.rows, 0)`;
    expect(drift.n).toBe(0);
    const global = await server.request("GET", "/timeline/global");
    expect(global.status).toBe(200);
    expect(global.body).toHaveLength(20);
    const reacted = await db.reaction.findFirstOrThrow({ select: { noteId: true } });
    const note = await server.request("GET", `/notes/${reacted.noteId}`);
    expect(note.body.reaction_count).toBeGreaterThan(0);
    expect(seeded.viewerId).toBeDefined();
    const login = await server.request("POST", "/login", {
      body: { name: "viewer", passphrase: "seeded-secret", captcha_token: "ok" },
    });
    expect(login.status).toBe(200);
  });
});
