// Notes posted side by side go in one statement (src/domain/notes/insert.ts, src/db/keyed-writes.ts):
// one author's, and several authors' of one lane. Each note still gets its own answer (its
// author's note_count as that note left it), every counter and mention is exact, also through two
// instances of one database at once (the authors' rows locked in one order: no deadlock), and a
// note that fails among others fails alone.
import { expect, it } from "vitest";
import { insertNote, type NewNote } from "../src/domain/notes/insert.ts";
import * as act from "./support/actions.ts";
import { account, type TestAccount } from "./support/fixtures.ts";
import { type TestServer, twoInstances } from "./support/server.ts";

/** `other`: a second instance of the same database. */
const fleet = twoInstances();

/** How many transactions wrote the notes of accounts whose names start with `prefix`, and how many notes. */
async function writtenBy(prefix: string): Promise<{ transactions: bigint; notes: bigint }> {
  const [counted] = await fleet.server.services.db.$queryRaw<{ transactions: bigint; notes: bigint }[]>`
    SELECT count(DISTINCT n.xmin::text) AS transactions, count(*) AS notes
    FROM notes n JOIN accounts a ON a.id = n.author_id WHERE a.name LIKE ${`${prefix}%`}`;
  return counted;
}

it("writes one author's concurrent notes in fewer statements, and counts each", async () => {
  const alice = await account(fleet.server, "nt_alice");
  const answers = await Promise.all(
    Array.from({ length: 24 }, (_, i) => act.post(fleet.server, alice, { content: `together ${i}` })),
  );
  expect(answers.map((a) => a.content).sort()).toEqual(Array.from({ length: 24 }, (_, i) => `together ${i}`).sort());
  const { transactions, notes } = await writtenBy("nt_alice");
  expect(notes).toBe(24n);
  expect(transactions).toBeLessThan(24n);
  expect((await fleet.server.request("GET", "/accounts/nt_alice")).body).toMatchObject({ note_count: 24 });
});

it("writes many authors' notes through two instances at once: counts, answers and mentions exact", async () => {
  const authors = await Promise.all(Array.from({ length: 16 }, (_, i) => account(fleet.server, `nt_many${i}`)));
  const mentionedOf = (i: number) => authors[(i + 1) % authors.length];
  // Each author three notes through each instance, in opposite orders, each naming the next author.
  const posts = (at: TestServer, order: TestAccount[]) =>
    order.flatMap((who) =>
      Array.from({ length: 3 }, () => {
        const i = authors.indexOf(who);
        return act.post(at, who, { content: `hello @${mentionedOf(i).name}` });
      }),
    );
  const answers = await Promise.all([...posts(fleet.server, authors), ...posts(fleet.other, [...authors].reverse())]);
  expect(new Set(answers.map((a) => a.id)).size).toBe(96);
  for (const [i, who] of authors.entries()) {
    expect((await fleet.server.request("GET", `/accounts/${who.name}`)).body).toMatchObject({ note_count: 6 });
    const mentions = await fleet.server.services.db.notification.count({
      where: { recipientId: BigInt(mentionedOf(i).id), type: "mentioned" },
    });
    expect(mentions).toBe(6);
  }
  const { transactions, notes } = await writtenBy("nt_many");
  expect(notes).toBe(96n);
  expect(transactions).toBeLessThan(96n);
});

/** A public note by `authorId`, as writeNote makes it. */
function newNote(authorId: string, content: string, fileIds: bigint[] = []): NewNote {
  return {
    row: {
      id: fleet.server.services.ids.next(),
      authorId: BigInt(authorId),
      content,
      cwComment: "",
      visibility: "public",
      sendToId: null,
      renoteId: null,
      replyToId: null,
      uri: null,
      url: null,
      editedAt: null,
    },
    fileIds,
    notices: [],
    mentions: [],
  };
}

it("answers each note with its author's note count as that note left it", async () => {
  const authors = await Promise.all(Array.from({ length: 8 }, (_, i) => account(fleet.server, `nt_count${i}`)));
  const notes = authors.flatMap((who) => [1, 2, 3].map((n) => ({ who, note: newNote(who.id, `note ${n}`) })));
  const written = await Promise.all(notes.map(({ note }) => insertNote(fleet.server.services, note)));
  for (const who of authors) {
    const counts = written.filter((_, i) => notes[i].who === who).map((w) => w?.notesCount);
    expect(counts.sort()).toEqual([1, 2, 3]);
  }
  // Eight authors in fewer lanes (src/domain/notes/insert.ts): some statement wrote notes of two.
  const [{ shared }] = await fleet.server.services.db.$queryRaw<{ shared: bigint }[]>`
    SELECT count(*) AS shared FROM (
      SELECT n.xmin::text FROM notes n JOIN accounts a ON a.id = n.author_id WHERE a.name LIKE 'nt_count%'
      GROUP BY n.xmin::text HAVING count(DISTINCT n.author_id) > 1) t`;
  expect(shared).toBeGreaterThan(0n);
});

it("answers a note that fails among others with its own error, and writes the others", async () => {
  const bob = await account(fleet.server, "nt_bob");
  const { services } = fleet.server;
  // The first goes at once; the four after it wait for it and go together, one naming a file
  // that does not exist (as one deleted since it was read).
  const written = await Promise.allSettled([
    insertNote(services, newNote(bob.id, "first")),
    insertNote(services, newNote(bob.id, "second")),
    insertNote(services, newNote(bob.id, "third", [services.ids.next()])),
    insertNote(services, newNote(bob.id, "fourth")),
    insertNote(services, newNote(bob.id, "fifth")),
  ]);
  expect(written.map((w) => w.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled", "fulfilled"]);
  expect((written[2] as PromiseRejectedResult).reason).toMatchObject({ code: "23503" });
  const contents = await services.db.note.findMany({ where: { authorId: BigInt(bob.id) }, select: { content: true } });
  expect(contents.map((n) => n.content).sort()).toEqual(["fifth", "first", "fourth", "second"]);
  expect((await fleet.server.request("GET", "/accounts/nt_bob")).body).toMatchObject({ note_count: 4 });
});
