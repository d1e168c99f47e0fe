// A remote note's Delete handled at the same moment as its Create (src/domain/overtaken.ts,
// docs/federation.md#activities-out-of-order): whichever comes second sees what the first did.
// The Create's statement is held after it has written the note (the author's row, which it updates
// in the same statement, is locked by another connection) while the Delete runs: the Delete must wait for
// it and then delete the note; without the shared key it found no note and the note stayed.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deleteRemoteNote, type RemoteNote, storeRemoteNote } from "../src/domain/notes/remote.ts";
import { remoteReact, remoteUnreact } from "../src/domain/reactions/remote.ts";
import { publicRemoteNote } from "./support/fixtures.ts";
import { serverAndOperator } from "./support/server.ts";

const opened = serverAndOperator();
const AUTHOR = "https://remote.example/users/mallory";
let authorId: bigint;
let sequence = 0;
/** A connection of the operator's that holds the author's row (the operator's own counts the waits:
 * pg_stat_activity stays as it was first read for the rest of a transaction). */
let holder: pg.Client;

beforeAll(async () => {
  authorId = opened.server.services.ids.next();
  await opened.server.services.db.account.create({
    data: {
      id: authorId,
      name: "mallory",
      nameKey: "mallory@remote.example",
      email: `${authorId}@x.invalid`,
      emailKey: `${authorId}@x.invalid`,
      nickname: "mallory",
      passphraseHash: "",
      host: "remote.example",
      uri: AUTHOR,
      inboxUrl: `${AUTHOR}/inbox`,
      fetchedAt: new Date(),
    },
  });
  holder = new pg.Client({ connectionString: opened.server.databaseUrl });
  await holder.connect();
});

afterAll(async () => {
  await holder?.end();
});

function remoteNote(): RemoteNote {
  return publicRemoteNote(`https://remote.example/notes/${++sequence}`, authorId);
}

/** The statements of this database that write the key-value table waiting for a lock (the server's queues' are not counted). */
async function waiting(): Promise<number> {
  const { rows } = await opened.operator.query(
    `SELECT count(*)::int AS n FROM pg_stat_activity
     WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%INSERT INTO federation_kv%'`,
  );
  return rows[0].n;
}

async function untilWaiting(n: number): Promise<void> {
  await expect.poll(waiting, { timeout: 10_000, interval: 10 }).toBe(n);
}

const count = (uri: string) => opened.server.services.db.note.count({ where: { uri } });

describe("a remote note's Delete and Create handled at the same moment", () => {
  it("the Delete waits for the Create's statement, then deletes the note", async () => {
    const { services } = opened.server;
    const note = remoteNote();
    await holder.query("BEGIN");
    await holder.query("SELECT FROM accounts WHERE id = $1 FOR UPDATE", [authorId]);
    const storing = storeRemoteNote(services, note);
    let deleting: Promise<boolean>;
    try {
      await untilWaiting(1);
      deleting = deleteRemoteNote(services, AUTHOR, note.uri, { remember: true });
      // The Delete waits for the Create's statement (the key it holds), not the other way round.
      await untilWaiting(2);
    } finally {
      await holder.query("COMMIT");
    }
    expect(await storing).not.toBeNull();
    expect(await deleting).toBe(true);
    expect(await count(note.uri)).toBe(0);
    const author = await services.db.account.findUniqueOrThrow({ where: { id: authorId } });
    expect(author.notesCount).toBe(await services.db.note.count({ where: { authorId } }));
  });

  it("a Create whose Delete is being handled stores nothing once it is", async () => {
    const { services } = opened.server;
    const note = remoteNote();
    expect(await deleteRemoteNote(services, AUTHOR, note.uri, { remember: true })).toBe(false);
    expect(await storeRemoteNote(services, note)).toBeNull();
    expect(await count(note.uri)).toBe(0);
  });

  it("a copy stored again within the hour of a deleted note stays deleted; a note deleted without remembering is stored again", async () => {
    const { services } = opened.server;
    const note = remoteNote();
    expect(await storeRemoteNote(services, note)).not.toBeNull();
    expect(await deleteRemoteNote(services, AUTHOR, note.uri, { remember: true })).toBe(true);
    expect(await storeRemoteNote(services, note)).toBeNull();
    expect(await count(note.uri)).toBe(0);

    // A renote's Undo is not remembered: the Announce sent again later is a renote again, once the
    // hour its first storing held the key has passed.
    const renote = remoteNote();
    expect(await storeRemoteNote(services, renote)).not.toBeNull();
    expect(await deleteRemoteNote(services, AUTHOR, renote.uri)).toBe(true);
    await services.db.$executeRaw`UPDATE federation_kv SET expires_at = now() - interval '1 second'
      WHERE key = ${JSON.stringify(["murmur", "deleted-note", renote.uri])}`;
    expect(await storeRemoteNote(services, renote)).not.toBeNull();
    expect(await count(renote.uri)).toBe(1);
  });
});

describe("a remote reaction's Undo and Like handled at the same moment", () => {
  it("the Undo waits for the Like's statement, then removes the reaction; the Like sent again adds nothing", async () => {
    const { services } = opened.server;
    const noteId = await storeRemoteNote(services, remoteNote());
    if (noteId === null) throw new Error("not stored");
    const like = new URL(`https://remote.example/likes/${++sequence}`);
    await holder.query("BEGIN");
    // The Like's statement locks its reactor's row (FOR KEY SHARE), after it has written the key.
    await holder.query("SELECT FROM accounts WHERE id = $1 FOR UPDATE", [authorId]);
    const reacting = remoteReact(services, authorId, noteId, "👍", like);
    let undoing: Promise<boolean>;
    try {
      await untilWaiting(1);
      undoing = remoteUnreact(services, authorId, noteId, { remember: like });
      await untilWaiting(2);
    } finally {
      await holder.query("COMMIT");
    }
    expect(await reacting).toBe(true);
    expect(await undoing).toBe(true);
    const reactions = () => services.db.reaction.count({ where: { noteId } });
    expect(await reactions()).toBe(0);
    expect(await remoteReact(services, authorId, noteId, "👍", like)).toBe(false);
    expect(await reactions()).toBe(0);
  });
});
