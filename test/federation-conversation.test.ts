// One conversation across three Murmur servers (docs/federation.md): A (127.0.0.2), B (127.0.0.3) and
// C (127.0.0.4), with ann on A, ben and bea on B, cal on C. ben follows ann, cal follows ben, ann
// follows cal. A thread started on A, answered on B and on C, reads linked on each server that has
// it; a direct note and a followers-only note reach only whom they are for.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cast } from "./support/cast.ts";
import { closeFederating, type ListeningServer, listening } from "./support/federation.ts";
import type { TestAccount } from "./support/fixtures.ts";

/** Delivery and the handling of what arrives are asynchronous: a bounded wait. */
const WAIT = { timeout: 15_000, interval: 50 };

let a: ListeningServer;
let b: ListeningServer;
let c: ListeningServer;
let ann: TestAccount;
let ben: TestAccount;
let bea: TestAccount;
let cal: TestAccount;

const host = (server: ListeningServer) => server.services.config.localHost;

async function follow(server: ListeningServer, who: TestAccount, handle: string): Promise<void> {
  const answer = await server.request("POST", `/accounts/${handle}/follow`, { token: who.token, body: {} });
  expect(answer.body).toEqual({ pending: true });
}

beforeAll(async () => {
  [a, b, c] = await Promise.all([listening("127.0.0.2"), listening("127.0.0.3"), listening("127.0.0.4")]);
  [{ alice: ann }, { alice: ben, stranger: bea }, { alice: cal }] = await Promise.all([
    cast(a, { alice: "ann" }),
    cast(b, { alice: "ben", stranger: "bea" }),
    cast(c, { alice: "cal" }),
  ]);
  await follow(b, ben, `@ann@${host(a)}`);
  await follow(c, cal, `@ben@${host(b)}`);
  await follow(a, ann, `@cal@${host(c)}`);
  // expect.poll only runs in a test.
  for (let waited = 0; ; waited += 50) {
    const counts = await Promise.all([a, b, c].map((server) => server.services.db.follow.count()));
    if (counts.every((count) => count === 2)) break;
    if (waited > WAIT.timeout) throw new Error(`the Accepts did not arrive: ${counts}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}, 60_000);

afterAll(async () => {
  for (const server of [a, b, c]) {
    await closeFederating(server);
  }
});

/** `who` posts `body` on `server` (at `path`): the note's ActivityPub id and local id. */
async function post(server: ListeningServer, who: TestAccount, body: object, path = "/notes") {
  const answer = await server.request("POST", path, { token: who.token, body });
  expect(answer.status, JSON.stringify(answer.body)).toBeLessThan(300);
  const id = (answer.body as { id: string }).id;
  return { uri: `${server.url}/notes/${id}`, id };
}

/** The local id `server` stored note `uri` under, once it is there. */
async function storedOn(server: ListeningServer, uri: string): Promise<string> {
  await expect.poll(() => server.services.db.note.count({ where: { uri } }), WAIT).toBe(1);
  return (await server.services.db.note.findUniqueOrThrow({ where: { uri } })).id.toString();
}

/** The note `id` on `server` as `who` reads it through REST. */
async function read(server: ListeningServer, id: string, who: TestAccount) {
  const answer = await server.request("GET", `/notes/${id}`, { token: who.token });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body as { id: string; reply_to_id?: string | null; reply_to?: { id: string } | null };
}

describe("a thread across three servers", () => {
  it("ann on A, ben on B, cal on C, ann again: each server links every reply it has to its parent", async () => {
    const root = await post(a, ann, { content: "root on A" });
    const rootOnB = await storedOn(b, root.uri);
    const benReply = await post(b, ben, { content: "ben on B" }, `/notes/${rootOnB}/reply`);
    const calParentId = await storedOn(c, benReply.uri);
    const calReply = await post(c, cal, { content: "cal on C" }, `/notes/${calParentId}/reply`);
    const calOnA = await storedOn(a, calReply.uri);
    const annReply = await post(a, ann, { content: "ann again" }, `/notes/${calOnA}/reply`);

    // On each server, every reply's parent is the row of its parent there.
    // A local note's row has no uri: it is read by its id.
    const local = (server: ListeningServer, note: { uri: string; id: string }) =>
      note.uri.startsWith(server.url) ? note.id : storedOn(server, note.uri);
    const parentOn = async (server: ListeningServer, note: { uri: string; id: string }) =>
      (
        await server.services.db.note.findUniqueOrThrow({ where: { id: BigInt(await local(server, note)) } })
      ).replyToId?.toString();
    const chain = [root, benReply, calReply, annReply];
    const present: Record<string, (typeof chain)[number][]> = {
      A: chain, // ann's own, ben's reply to her, cal (followed), her answer
      B: chain, // ann (followed), ben's own, cal answering ben, ann's answer
      C: [benReply, calReply, annReply], // ben (followed), cal's own, ann answering cal
    };
    for (const [name, server] of [
      ["A", a],
      ["B", b],
      ["C", c],
    ] as const) {
      const notes = present[name];
      const ids = await Promise.all(notes.map((note) => local(server, note)));
      for (let i = 1; i < notes.length; i++) {
        if (notes[i - 1] === chain[chain.indexOf(notes[i]) - 1]) {
          expect(await parentOn(server, notes[i]), `${name}: parent of note ${i}`).toBe(ids[i - 1]);
        }
      }
    }
  });
});

describe("visibility across three servers", () => {
  it("a direct note from A to ben is his alone on B, and not on C", async () => {
    const direct = await post(a, ann, { content: "psst", visibility: "direct", send_to: `@ben@${host(b)}` });
    const onB = await storedOn(b, direct.uri);
    await read(b, onB, ben);
    expect((await b.request("GET", `/notes/${onB}`, { token: bea.token })).body).toEqual({
      error: "NOTE_NOT_FOUND",
    });
    // C has no follower of ann: a later public note's arrival on B bounds the wait for a delivery
    // that must not happen.
    const later = await post(a, ann, { content: "later" });
    await storedOn(b, later.uri);
    expect(await c.services.db.note.count({ where: { uri: direct.uri } })).toBe(0);
  });

  it("a followers-only note is seen by followers on B, never delivered to C", async () => {
    const note = await post(a, ann, { content: "friends", visibility: "followers" });
    const onB = await storedOn(b, note.uri);
    await read(b, onB, ben);
    expect((await b.request("GET", `/notes/${onB}`, { token: bea.token })).status).toBe(404);
    const later = await post(a, ann, { content: "after friends" });
    await storedOn(b, later.uri);
    expect(await c.services.db.note.count({ where: { uri: note.uri } })).toBe(0);
  });
});

/** The `type` notifications of `who` on `server`: their note ids. */
async function notified(server: ListeningServer, who: TestAccount, type: string): Promise<string[]> {
  const answer = await server.request("GET", "/notifications", { token: who.token });
  expect(answer.status).toBe(200);
  return (answer.body as { notifications: { type: string; note_id?: string; noteId?: string }[] }).notifications
    .filter((n) => n.type === type)
    .map((n) => n.note_id ?? n.noteId ?? "");
}

describe("renotes, quotes and reactions crossing servers", () => {
  it("ben renotes ann's note, cal quotes ben's: each author is notified at home; ben's reaction shows on A, until ann deletes it", async () => {
    const note = await post(a, ann, { content: "share me" });
    const onB = await storedOn(b, note.uri);
    const renote = await post(b, ben, {}, `/notes/${onB}/renote`);
    // A plain renote arrives as its Announce, stored under the Announce's id.
    const renoteOnA = await storedOn(a, `${renote.uri}#announce`);
    expect(
      (await a.services.db.note.findUniqueOrThrow({ where: { id: BigInt(renoteOnA) } })).renoteId?.toString(),
    ).toBe(note.id);
    await expect.poll(() => notified(a, ann, "renoted"), WAIT).toContain(note.id);

    const benNote = await post(b, ben, { content: "quote me" });
    const benOnC = await storedOn(c, benNote.uri);
    const quote = await post(c, cal, { content: "quoting ben" }, `/notes/${benOnC}/renote`);
    const quoteOnB = await storedOn(b, quote.uri);
    expect((await b.services.db.note.findUniqueOrThrow({ where: { id: BigInt(quoteOnB) } })).renoteId?.toString()).toBe(
      benNote.id,
    );
    await expect.poll(() => notified(b, ben, "renoted"), WAIT).toContain(benNote.id);

    const reacted = await b.request("POST", `/notes/${onB}/reaction`, { token: ben.token, body: { emoji: "🎉" } });
    expect(reacted.status, JSON.stringify(reacted.body)).toBeLessThan(300);
    await expect
      .poll(async () => (await a.request("GET", `/notes/${note.id}/reactions`)).body as { emoji: string }[], WAIT)
      .toEqual([expect.objectContaining({ emoji: "🎉" })]);
    expect(((await a.request("GET", `/notes/${note.id}`)).body as { reaction_counts: object }).reaction_counts).toEqual(
      {
        "🎉": 1,
      },
    );

    // ann deletes it: gone on B too, with ben's renote of it.
    expect((await a.request("DELETE", `/notes/${note.id}`, { token: ann.token })).status).toBeLessThan(300);
    await expect.poll(() => b.services.db.note.count({ where: { uri: note.uri } }), WAIT).toBe(0);
    expect((await b.request("GET", `/notes/${onB}`, { token: ben.token })).status).toBe(404);
  });
});
