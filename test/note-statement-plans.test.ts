// A note's statement (src/domain/notes/service.ts insertNote) is named, and PostgreSQL keeps its
// generic plan only when that plan costs no more than one made for the values. An array it cannot
// see it takes for 10 or 100 elements, so with the mentioned names as an array the note's
// statement was planned anew at every note with a mention: 0.56-0.64 ms of PostgreSQL's time in
// the bench (bench/README.md, "Note creation's plans"); GraphQL's renote loader's read had the same
// flaw. Here each statement, as the server sent it, is run again as a named statement until
// PostgreSQL chooses between its plans.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { storeRemoteNote } from "../src/domain/notes/remote.ts";
import { post } from "./support/actions.ts";
import { account, type TestAccount, uploadFile } from "./support/fixtures.ts";
import { gql } from "./support/graphql.ts";
import { image } from "./support/media.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

/** The statements the server sent whose text has `watched`, as node-postgres was given them. */
const sent: { text: string; values: unknown[] }[] = [];
const NOTE_INSERT = "INSERT INTO notes (id, author_id";
let watched = NOTE_INSERT;
const { query } = pg.Pool.prototype as unknown as { query: (config: unknown, values?: unknown) => unknown };
(pg.Pool.prototype as unknown as { query: typeof query }).query = function (config, values) {
  const c = config as { text?: string; values?: unknown[] } | undefined;
  if (c?.text?.includes(watched)) sent.push({ text: c.text, values: c.values ?? [] });
  return query.call(this, config, values);
};

let server: TestServer;
let admin: pg.Client;
let alice: TestAccount;
beforeAll(async () => {
  server = await startTestServer();
  admin = new pg.Client({ connectionString: server.databaseUrl });
  await admin.connect();
  alice = await account(server, "alice");
  await Promise.all(["bob", "carol"].map((name) => account(server, name)));
  // Planned as in a server with many accounts and notes: a few rows make every plan a scan.
  await admin.query(
    `INSERT INTO accounts (id, name, name_key, email, email_key, nickname, passphrase_hash)
     SELECT 1000000 + g, 'filler' || g, 'filler' || g, g || '@filler.test', g || '@filler.test', 'f', '!'
     FROM generate_series(1, 5000) g`,
  );
  await admin.query(
    `INSERT INTO notes (id, author_id, content) SELECT 2000000 + g, 1000000 + (g % 5000) + 1, 'filler' FROM generate_series(1, 20000) g`,
  );
  await admin.query("ANALYZE accounts; ANALYZE notes");
});
afterAll(async () => {
  await admin?.end();
  await server?.close();
});

/** How PostgreSQL planned the statement of the note `write` makes, run 8 times as one named statement. */
async function plansOf(
  name: string,
  write: () => Promise<bigint | string>,
): Promise<{ generic: number; custom: number }> {
  sent.length = 0;
  const note = { id: String(await write()) };
  expect(sent).toHaveLength(1);
  const [{ text, values }] = sent;
  for (let run = 0; run < 8; run++) {
    // A note written again where it was, in a transaction that is rolled back.
    await admin.query("BEGIN");
    if (watched === NOTE_INSERT) {
      await admin.query("DELETE FROM notifications WHERE note_id = $1", [note.id]);
      await admin.query("DELETE FROM notes WHERE id = $1", [note.id]);
    }
    await admin.query({ name, text, values });
    await admin.query("ROLLBACK");
  }
  const { rows } = await admin.query(
    "SELECT generic_plans::int AS generic, custom_plans::int AS custom FROM pg_prepared_statements WHERE name = $1",
    [name],
  );
  return rows[0];
}

const posted = (body: Record<string, unknown>) => async () => (await post(server, alice, body)).id;

describe("a note's statement keeps its generic plan", () => {
  it("for a plain note", async () => {
    expect((await plansOf("plain", posted({ content: "nothing to name" }))).generic).toBeGreaterThan(0);
  });

  it("for a note that mentions accounts", async () => {
    expect((await plansOf("mentions", posted({ content: "hello @bob and @carol" }))).generic).toBeGreaterThan(0);
  });

  it("for a note with files", async () => {
    const files = [
      await uploadFile(server, alice, await image("png", 8, 8), "one.png"),
      await uploadFile(server, alice, await image("png", 8, 8), "two.png"),
    ];
    const plans = await plansOf(
      "files",
      posted({ content: "two pictures", attachment_file_ids: files.map((f) => f.id) }),
    );
    expect(plans.generic).toBeGreaterThan(0);
  });

  it("for another server's note that mentions accounts here", async () => {
    const [{ id: author }] = (
      await admin.query(
        `INSERT INTO accounts (id, name, name_key, email, email_key, nickname, passphrase_hash, host, uri, inbox_url)
         VALUES (2000000, 'remote', 'remote@remote.example', 'r@remote.example', 'r@remote.example', 'r', '',
                 'remote.example', 'https://remote.example/users/remote', 'https://remote.example/users/remote/inbox')
         RETURNING id::text`,
      )
    ).rows;
    const here = (await admin.query("SELECT id FROM accounts WHERE name_key IN ('bob', 'carol')")).rows;
    const plans = await plansOf("remote", async () => {
      const id = await storeRemoteNote(server.services, {
        uri: "https://remote.example/notes/1",
        url: null,
        authorId: BigInt(author),
        content: "hello @bob and @carol",
        cwComment: "",
        visibility: "public",
        sendToId: null,
        replyToId: null,
        renoteId: null,
        mentionedIds: here.map((row: { id: string }) => BigInt(row.id)),
        attachments: [],
      });
      if (id === null) throw new Error("the remote note was not stored");
      return id;
    });
    expect(plans.generic).toBeGreaterThan(0);
  });

  it("for the notes GraphQL's renote loader reads", async () => {
    const renoted = await post(server, alice, { content: "to renote" });
    expect((await server.request("POST", `/notes/${renoted.id}/renote`, { token: alice.token, body: {} })).status).toBe(
      200,
    );
    watched = "JOIN accounts author ON author.id = n.author_id";
    try {
      const plans = await plansOf("renoted", async () => {
        const answer = await gql(
          server,
          "{ homeTimeline(first: 5) { ... on NoteConnection { edges { node { renote { id } } } } } }",
          {},
          alice,
        );
        expect(JSON.stringify(answer)).toContain(renoted.id);
        return renoted.id;
      });
      expect(plans.generic).toBeGreaterThan(0);
    } finally {
      watched = NOTE_INSERT;
    }
  });
});
