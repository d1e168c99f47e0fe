// Concurrency invariants under 50 parallel clients (docs/notes.md#reactions,
// docs/accounts.md#follows, docs/timelines.md#lists): one reaction per account per note, unique
// names and e-mails, one follow per pair, list membership at most once, one bookmark per account
// per note, and counters equal to the rows they count. Each burst is fired with Promise.all; the
// database is then read directly.

import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { runDeletions } from "../src/domain/accounts/deletion.ts";
import * as act from "./support/actions.ts";
import { account, directAccount, PASSPHRASE, type TestAccount, uploadFile } from "./support/fixtures.ts";
import { image } from "./support/media.ts";
import { type Answer, startTestServer, type TestServer } from "./support/server.ts";

/** Clients acting at once in every burst. */
const CLIENTS = 50;

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

// ---------------------------------------------------------------------------------------------
// The invariants, checked over every row of this file's database.

interface CounterRow {
  name: string;
  followers_count: number;
  followers: number;
  following_count: number;
  following: number;
  notes_count: number;
  notes: number;
}

/** Every account whose stored counters differ from the rows they count (or are negative). */
async function counterDrift(): Promise<CounterRow[]> {
  const rows = await server.services.db.$queryRaw<CounterRow[]>`
    SELECT a.name,
      a.followers_count, (SELECT count(*) FROM follows f WHERE f.followee_id = a.id)::int AS followers,
      a.following_count, (SELECT count(*) FROM follows f WHERE f.follower_id = a.id)::int AS following,
      a.notes_count, (SELECT count(*) FROM notes n WHERE n.author_id = a.id)::int AS notes
    FROM accounts a ORDER BY a.name`;
  return rows.filter(
    (r) =>
      r.followers_count !== r.followers ||
      r.following_count !== r.following ||
      r.notes_count !== r.notes ||
      r.followers_count < 0 ||
      r.following_count < 0 ||
      r.notes_count < 0,
  );
}

/** Per invariant, how many rows break it: all zero when the database is sound. */
async function brokenRows(): Promise<Record<string, number>> {
  const rows = await server.services.db.$queryRaw<{ invariant: string; n: number }[]>`
    SELECT 'two reactions by one account on one note' AS invariant, count(*)::int AS n
      FROM (SELECT 1 FROM reactions GROUP BY note_id, account_id HAVING count(*) > 1) d
    UNION ALL SELECT 'two follows of one pair', count(*)::int
      FROM (SELECT 1 FROM follows GROUP BY follower_id, followee_id HAVING count(*) > 1) d
    UNION ALL SELECT 'two follow requests of one pair', count(*)::int
      FROM (SELECT 1 FROM follow_requests GROUP BY requester_id, target_id HAVING count(*) > 1) d
    UNION ALL SELECT 'a pair both following and requesting', count(*)::int
      FROM follow_requests r JOIN follows f ON f.follower_id = r.requester_id AND f.followee_id = r.target_id
    UNION ALL SELECT 'a list member twice', count(*)::int
      FROM (SELECT 1 FROM list_members GROUP BY list_id, account_id HAVING count(*) > 1) d
    UNION ALL SELECT 'two bookmarks by one account of one note', count(*)::int
      FROM (SELECT 1 FROM bookmarks GROUP BY account_id, note_id HAVING count(*) > 1) d
    UNION ALL SELECT 'two accounts with one name in any letter case', count(*)::int
      FROM (SELECT 1 FROM accounts GROUP BY lower(name) HAVING count(*) > 1) d
    UNION ALL SELECT 'two accounts with one e-mail in any letter case', count(*)::int
      FROM (SELECT 1 FROM accounts GROUP BY lower(email) HAVING count(*) > 1) d
    UNION ALL SELECT 'a name or e-mail key that is not the lower-cased value', count(*)::int
      FROM accounts WHERE name_key <> lower(name) OR email_key <> lower(email)
    UNION ALL SELECT 'a reaction count (note, emoji) that is not the number of its reactions', count(*)::int
      FROM (SELECT note_id, emoji, sum(count) AS kept FROM note_reaction_counts GROUP BY 1, 2) k
      FULL JOIN (SELECT note_id, emoji, count(*) AS rows FROM reactions GROUP BY 1, 2) r USING (note_id, emoji)
      WHERE coalesce(k.kept, 0) <> coalesce(r.rows, 0)
    UNION ALL SELECT 'a reaction count shard below zero', count(*)::int FROM note_reaction_counts WHERE count < 0
    UNION ALL SELECT 'a plain renote that outlived its note (an empty note)', count(*)::int
      FROM notes n WHERE n.renote_id IS NULL AND n.content = ''
        AND NOT EXISTS (SELECT 1 FROM note_attachments t WHERE t.note_id = n.id)`;
  return Object.fromEntries(rows.map((r) => [r.invariant, r.n]));
}

interface Breakage {
  broken: Record<string, number>;
  drift: string[];
}

async function breakage(): Promise<Breakage> {
  const [broken, drift] = await Promise.all([brokenRows(), counterDrift()]);
  return { broken, drift: drift.map((row) => JSON.stringify(row)) };
}

// Each test answers for what it breaks, not for what an earlier failing test left behind.
let before: Breakage;
beforeEach(async () => {
  before = await breakage();
});
afterEach(async () => {
  await expectInvariants();
});

/** No invariant is broken anywhere in the database beyond what was broken when the test began. */
async function expectInvariants(): Promise<void> {
  const now = await breakage();
  const newlyBroken = Object.entries(now.broken).filter(([k, n]) => n > (before.broken[k] ?? 0));
  expect(Object.fromEntries(newlyBroken)).toEqual({});
  expect(now.drift.filter((row) => !before.drift.includes(row)).map((row) => JSON.parse(row))).toEqual([]);
}

// ---------------------------------------------------------------------------------------------
// Clients and answers.

let seq = 0;
/** `count` fresh verified accounts with tokens, made by the factory (the API would take longer). */
function crowd(prefix: string, count = CLIENTS): Promise<TestAccount[]> {
  seq += 1;
  return Promise.all(Array.from({ length: count }, (_, i) => directAccount(server, `${prefix}${seq}x${i}`)));
}

/** `count` requests at once. */
function burst(count: number, request: (i: number) => Promise<Answer>): Promise<Answer[]> {
  return Promise.all(Array.from({ length: count }, (_, i) => request(i)));
}

/** A deterministic pseudo-random source (mulberry32), so a failing order can be replayed. */
function randomSource(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function shuffled<T>(items: T[], random: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

/** An answer as `status` or `status CODE`. */
function outcome(answer: Answer): string {
  const code = typeof answer.body === "object" && answer.body?.error ? ` ${answer.body.error}` : "";
  return `${answer.status}${code}`;
}

/** How many answers had each outcome. */
function tally(answers: Answer[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const answer of answers) counts[outcome(answer)] = (counts[outcome(answer)] ?? 0) + 1;
  return counts;
}

interface Op {
  kind: string;
  who: TestAccount;
  run: () => Promise<Answer>;
}

interface Done extends Op {
  answer: Answer;
}

/** Fires every op at once, in the order given. */
async function fire(ops: Op[]): Promise<Done[]> {
  const answers = await Promise.all(ops.map((op) => op.run()));
  return ops.map((op, i) => ({ ...op, answer: answers[i] }));
}

/**
 * Each op's answer is one its kind allows; the others are listed. Soft: the test goes on to
 * check the rows, which matter more than one wrong answer.
 */
function expectOutcomes(done: Done[], allowed: Record<string, string[]>): void {
  const unexpected = done
    .filter((d) => !allowed[d.kind]?.includes(outcome(d.answer)))
    .map((d) => `${d.kind} by ${d.who.name}: ${outcome(d.answer)}`);
  expect.soft(unexpected).toEqual([]);
}

const succeeded = (done: Done[], kind: string, who: TestAccount) =>
  done.filter((d) => d.kind === kind && d.who === who && d.answer.status < 300).length;

// ---------------------------------------------------------------------------------------------
// The requests.

const post = (who: TestAccount, content: string) =>
  server.request("POST", "/notes", { token: who.token, body: { content } });
const deleteNote = (who: TestAccount, noteId: string) =>
  server.request("DELETE", `/notes/${noteId}`, { token: who.token });
const renote = (who: TestAccount, noteId: string, content = "") =>
  server.request("POST", `/notes/${noteId}/renote`, { token: who.token, body: content ? { content } : {} });
const reply = (who: TestAccount, noteId: string, content: string) =>
  server.request("POST", `/notes/${noteId}/reply`, { token: who.token, body: { content } });
const react = (who: TestAccount, noteId: string, emoji = "🔥") =>
  server.request("POST", `/notes/${noteId}/reaction`, { token: who.token, body: { emoji } });
const unreact = (who: TestAccount, noteId: string) =>
  server.request("DELETE", `/notes/${noteId}/reaction`, { token: who.token });
const bookmark = (who: TestAccount, noteId: string) =>
  server.request("POST", `/notes/${noteId}/bookmark`, { token: who.token, body: {} });
const unbookmark = (who: TestAccount, noteId: string) =>
  server.request("DELETE", `/notes/${noteId}/bookmark`, { token: who.token });
const follow = (who: TestAccount, target: TestAccount) =>
  server.request("POST", `/accounts/${target.name}/follow`, { token: who.token, body: {} });
const unfollow = (who: TestAccount, target: TestAccount) =>
  server.request("DELETE", `/accounts/${target.name}/follow`, { token: who.token, body: {} });

const noteOf = async (who: TestAccount, content: string) => (await act.post(server, who, { content })).id;

/** The counts of the public view (docs/accounts.md#shapes). */
async function publicCounts(who: TestAccount) {
  const answer = await server.request("GET", `/accounts/${who.name}`);
  expect(answer.status).toBe(200);
  const { followed_count, following_count, note_count } = answer.body;
  return { followed_count, following_count, note_count };
}

interface Counts {
  name: string;
  followed_count: number;
  following_count: number;
  note_count: number;
}

/** The stored rows that count each account's followers, follows and notes, by name. */
async function rowsOf(accounts: TestAccount[]): Promise<Counts[]> {
  const ids = accounts.map((a) => BigInt(a.id));
  const rows = await server.services.db.$queryRaw<Counts[]>`
    SELECT a.name,
      (SELECT count(*) FROM follows f WHERE f.followee_id = a.id)::int AS followed_count,
      (SELECT count(*) FROM follows f WHERE f.follower_id = a.id)::int AS following_count,
      (SELECT count(*) FROM notes n WHERE n.author_id = a.id)::int AS note_count
    FROM accounts a WHERE a.id = ANY(${ids})`;
  return rows;
}

/** The public view (docs/accounts.md#shapes) shows exactly the rows for each of `accounts`. */
async function expectViewsMatchRows(accounts: TestAccount[]): Promise<void> {
  const [views, rows] = await Promise.all([
    Promise.all(accounts.map(async (a) => ({ name: a.name, ...(await publicCounts(a)) }))),
    rowsOf(accounts),
  ]);
  const byName = (a: Counts, b: Counts) => (a.name < b.name ? -1 : 1);
  expect(views.sort(byName)).toEqual(rows.sort(byName));
}

// ---------------------------------------------------------------------------------------------

describe("one reaction per account per note (docs/notes.md#reactions)", () => {
  it(`${CLIENTS} concurrent reactions by one account: one 200, the rest 400 ALREADY_REACTED, one row`, async () => {
    const [author, fan] = await crowd("rx", 2);
    const noteId = await noteOf(author, "react to me once");
    const answers = await burst(CLIENTS, (i) => react(fan, noteId, i % 2 ? "🔥" : "👍"));
    expect(tally(answers)).toEqual({ 200: 1, "400 ALREADY_REACTED": CLIENTS - 1 });
    const rows = await server.services.db.reaction.findMany({ where: { noteId: BigInt(noteId) } });
    expect(rows.map((r) => r.accountId.toString())).toEqual([fan.id]);
    // The one reaction that stands is the one the 200 answered with.
    const winner = answers.find((a) => a.status === 200);
    expect(winner?.body.reactions).toEqual([{ emoji: rows[0].emoji, reacted_by: fan.id }]);
    // And exactly one `reacted` notification went to the author.
    const notified = await server.services.db.notification.count({
      where: { recipientId: BigInt(author.id), type: "reacted", noteId: BigInt(noteId) },
    });
    expect(notified).toBe(1);
  });

  it(`${CLIENTS} accounts reacting, unreacting and reacting again at once, shuffled: rows match the answers`, async () => {
    const fans = await crowd("rmix");
    const author = fans[0];
    const noteId = await noteOf(author, "a busy note");
    const random = randomSource(9);
    const ops: Op[] = fans.flatMap((who) => [
      { kind: "react", who, run: () => react(who, noteId) },
      { kind: "unreact", who, run: () => unreact(who, noteId) },
      { kind: "react", who, run: () => react(who, noteId, "🎉") },
    ]);
    const done = await fire(shuffled(ops, random));
    expectOutcomes(done, { react: ["200", "400 ALREADY_REACTED"], unreact: ["204", "400 NOT_REACTED"] });

    const rows = await server.services.db.reaction.findMany({ where: { noteId: BigInt(noteId) } });
    const reacted = new Set(rows.map((r) => r.accountId.toString()));
    // Per account: successful reactions minus successful removals is exactly its rows (0 or 1).
    const mismatched = fans
      .map((who) => ({
        name: who.name,
        net: succeeded(done, "react", who) - succeeded(done, "unreact", who),
        rows: reacted.has(who.id) ? 1 : 0,
      }))
      .filter((m) => m.net !== m.rows);
    expect(mismatched).toEqual([]);
    // The note shows the newest 20 stored reactions, and counts exactly the stored ones.
    const note = await server.request("GET", `/notes/${noteId}`);
    expect(note.status).toBe(200);
    const newest = [...rows].sort((a, b) => (a.id > b.id ? -1 : 1)).slice(0, 20);
    expect(note.body.reactions).toEqual(newest.map((r) => ({ emoji: r.emoji, reacted_by: r.accountId.toString() })));
    expect(note.body.reaction_count).toBe(rows.length);
    const byEmoji: Record<string, number> = {};
    for (const r of rows) byEmoji[r.emoji] = (byEmoji[r.emoji] ?? 0) + 1;
    expect(note.body.reaction_counts).toEqual(byEmoji);
  });
});

describe("unique names and e-mails (docs/accounts.md#registration)", () => {
  /** The `i`-th letter-case spelling of `word`: bit k of `i` upper-cases letter k. */
  const spelling = (word: string, i: number) => [...word].map((c, k) => ((i >> k) & 1 ? c.toUpperCase() : c)).join("");
  const createAccount = (name: string, email: string) =>
    server.request("POST", "/accounts", { body: { name, email, passphrase: PASSPHRASE, captcha_token: "ok" } });

  it(`${CLIENTS} concurrent registrations of one name in ${CLIENTS} letter cases: one 200, the rest 409 ACCOUNT_NAME_IN_USE`, async () => {
    const answers = await burst(CLIENTS, (i) => createAccount(spelling("racename", i), `racename${i}@example.com`));
    expect(tally(answers)).toEqual({ 200: 1, "409 ACCOUNT_NAME_IN_USE": CLIENTS - 1 });
    const winner = answers.find((a) => a.status === 200)?.body;
    const rows = await server.services.db.$queryRaw<{ id: string; email: string }[]>`
      SELECT id::text AS id, email FROM accounts WHERE lower(name) = 'racename'`;
    expect(rows).toEqual([{ id: winner.id, email: winner.email }]);
    // None of the losers left a row behind under its own e-mail either.
    const emails = await server.services.db.account.count({ where: { email: { startsWith: "racename" } } });
    expect(emails).toBe(1);
  });

  it(`${CLIENTS} concurrent registrations of one e-mail in ${CLIENTS} letter cases: one 200, the rest 409 EMAIL_IN_USE`, async () => {
    const answers = await burst(CLIENTS, (i) => createAccount(`samebox${i}`, spelling("samebox@example.com", i)));
    expect(tally(answers)).toEqual({ 200: 1, "409 EMAIL_IN_USE": CLIENTS - 1 });
    const winner = answers.find((a) => a.status === 200)?.body;
    const rows = await server.services.db.$queryRaw<{ id: string; email: string }[]>`
      SELECT id::text AS id, email FROM accounts WHERE lower(email) = 'samebox@example.com'`;
    expect(rows).toEqual([{ id: winner.id, email: winner.email }]);
    expect(await server.services.db.account.count({ where: { name: { startsWith: "samebox" } } })).toBe(1);
  });

  it(`${CLIENTS} concurrent registrations contesting names and e-mails crosswise: each name and e-mail once`, async () => {
    // Client i wants name pair(i) and e-mail pair(i + 1): every name and every e-mail is wanted
    // by two clients, each in a different letter case.
    const pair = (i: number) => `cross${Math.floor(i / 2) % (CLIENTS / 2)}`;
    const answers = await burst(CLIENTS, (i) =>
      createAccount(spelling(pair(i), i), spelling(`${pair(i + 1)}@example.com`, i + 1)),
    );
    expect(
      Object.keys(tally(answers)).filter((k) => !["200", "409 ACCOUNT_NAME_IN_USE", "409 EMAIL_IN_USE"].includes(k)),
    ).toEqual([]);
    const rows = await server.services.db.account.findMany({
      where: { nameKey: { startsWith: "cross" } },
      select: { id: true },
    });
    // Exactly the 200s made rows.
    expect(rows.map((r) => r.id.toString()).sort()).toEqual(
      answers
        .filter((a) => a.status === 200)
        .map((a) => a.body.id)
        .sort(),
    );
  });
});

describe("one follow per pair (docs/accounts.md#follows)", () => {
  it(`${CLIENTS} concurrent follows of one pair: one 201, the rest ALREADY_FOLLOWING; then ${CLIENTS} unfollows: one 204`, async () => {
    const [fan, star] = await crowd("fpair", 2);
    const follows = await burst(CLIENTS, () => follow(fan, star));
    expect(tally(follows)).toEqual({ 201: 1, "400 ALREADY_FOLLOWING": CLIENTS - 1 });
    expect(follows.find((a) => a.status === 201)?.body).toEqual({ pending: false });
    expect((await rowsOf([star]))[0]).toMatchObject({ followed_count: 1 });
    await expectViewsMatchRows([fan, star]);
    const followed = await server.services.db.notification.count({
      where: { recipientId: BigInt(star.id), type: "followed" },
    });
    expect(followed).toBe(1);

    const unfollows = await burst(CLIENTS, () => unfollow(fan, star));
    expect(tally(unfollows)).toEqual({ 204: 1, "400 YOU_ARE_NOT_FOLLOW_ACCOUNT": CLIENTS - 1 });
    expect((await rowsOf([star]))[0]).toMatchObject({ followed_count: 0 });
    await expectViewsMatchRows([fan, star]);
  });

  it(`${CLIENTS} accounts following, unfollowing and following one account again, shuffled: counters equal rows`, async () => {
    const fans = await crowd("fmix");
    const star = await account(server, "fmixstar");
    const random = randomSource(17);
    const followersOfStar = async () =>
      new Set(
        (await server.services.db.follow.findMany({ where: { followeeId: BigInt(star.id) } })).map((f) =>
          f.followerId.toString(),
        ),
      );
    let following = new Set<string>();
    for (let round = 0; round < 2; round++) {
      const ops: Op[] = fans.flatMap((who) => [
        { kind: "follow", who, run: () => follow(who, star) },
        { kind: "unfollow", who, run: () => unfollow(who, star) },
        { kind: "follow", who, run: () => follow(who, star) },
      ]);
      const done = await fire(shuffled(ops, random));
      expectOutcomes(done, {
        follow: ["201", "400 ALREADY_FOLLOWING"],
        unfollow: ["204", "400 YOU_ARE_NOT_FOLLOW_ACCOUNT"],
      });
      // Per account: where the round began, plus its successful follows, minus its successful
      // unfollows, is exactly its rows (0 or 1).
      const now = await followersOfStar();
      const mismatched = fans
        .map((who) => ({
          name: who.name,
          expected: (following.has(who.id) ? 1 : 0) + succeeded(done, "follow", who) - succeeded(done, "unfollow", who),
          rows: now.has(who.id) ? 1 : 0,
        }))
        .filter((m) => m.expected !== m.rows);
      expect(mismatched).toEqual([]);
      following = now;
      await expectInvariants();
    }
    await expectViewsMatchRows([star, ...fans]);
  });

  it(`${CLIENTS} accounts following each other both ways at once: every follow 201, counters equal rows`, async () => {
    // Pairs (2k, 2k+1) follow each other at the same moment, and each also follows its
    // neighbour pair, so every follow locks two account rows another follow locks the other way.
    const people = await crowd("mutual");
    const edges: [TestAccount, TestAccount][] = [];
    for (let k = 0; k < CLIENTS; k += 2) {
      const [a, b] = [people[k], people[k + 1]];
      const next = people[(k + 2) % CLIENTS];
      edges.push([a, b], [b, a], [b, next], [next, b]);
    }
    const random = randomSource(23);
    const ids = people.map((p) => BigInt(p.id));
    const followRows = () => server.services.db.follow.count({ where: { followerId: { in: ids } } });
    const followOps: Op[] = edges.map(([who, whom]) => ({ kind: "follow", who, run: () => follow(who, whom) }));
    const follows = await fire(shuffled(followOps, random));
    expectOutcomes(follows, { follow: ["201"] });
    // Whatever was answered, the rows are exactly the follows answered 201.
    const followed = new Set(follows.filter((d) => d.answer.status === 201).map((d) => d.run));
    expect(await followRows()).toBe(followed.size);
    await expectInvariants();

    const unfollows = await fire(
      shuffled(
        edges.map(([who, whom], i) => ({
          kind: followed.has(followOps[i].run) ? "unfollow" : "unfollow (not followed)",
          who,
          run: () => unfollow(who, whom),
        })),
        random,
      ),
    );
    expectOutcomes(unfollows, { unfollow: ["204"], "unfollow (not followed)": ["400 YOU_ARE_NOT_FOLLOW_ACCOUNT"] });
    expect(await followRows()).toBe(followed.size - unfollows.filter((d) => d.answer.status === 204).length);
    await expectViewsMatchRows(people);
  });

  it(`${CLIENTS} concurrent follows of a locked account: one 201 pending, one request row, no follow`, async () => {
    const [fan, shy] = await crowd("lockd", 2);
    const locked = await server.request("PATCH", `/accounts/${shy.name}`, { token: shy.token, body: { locked: true } });
    expect(locked.status).toBe(200);
    const answers = await burst(CLIENTS, () => follow(fan, shy));
    expect(tally(answers)).toEqual({ 201: 1, "400 ALREADY_FOLLOWING": CLIENTS - 1 });
    expect(answers.find((a) => a.status === 201)?.body).toEqual({ pending: true });
    const { db } = server.services;
    expect(await db.followRequest.count({ where: { targetId: BigInt(shy.id) } })).toBe(1);
    expect(await db.follow.count({ where: { followeeId: BigInt(shy.id) } })).toBe(0);
    expect(await db.notification.count({ where: { recipientId: BigInt(shy.id), type: "followRequested" } })).toBe(1);
    await expectViewsMatchRows([fan, shy]);
  });

  it(`${CLIENTS} concurrent accepts of one follow request: one 204, the rest FOLLOW_REQUEST_NOT_FOUND, one follow`, async () => {
    const [fan, shy] = await crowd("accpt", 2);
    await server.request("PATCH", `/accounts/${shy.name}`, { token: shy.token, body: { locked: true } });
    expect((await follow(fan, shy)).body).toEqual({ pending: true });
    const answers = await burst(CLIENTS, () =>
      server.request("POST", `/follow_requests/${fan.name}/accept`, { token: shy.token, body: {} }),
    );
    expect(tally(answers)).toEqual({ 204: 1, "404 FOLLOW_REQUEST_NOT_FOUND": CLIENTS - 1 });
    const { db } = server.services;
    expect(await db.follow.count({ where: { followeeId: BigInt(shy.id) } })).toBe(1);
    expect(await db.followRequest.count({ where: { targetId: BigInt(shy.id) } })).toBe(0);
    expect(await db.notification.count({ where: { recipientId: BigInt(fan.id), type: "followAccepted" } })).toBe(1);
    await expectViewsMatchRows([fan, shy]);
  });

  it(`${CLIENTS} requesters, each withdrawing while the locked account accepts: counters equal rows`, async () => {
    const fans = await crowd("wdraw");
    const shy = await account(server, "wdrawshy");
    await server.request("PATCH", `/accounts/${shy.name}`, { token: shy.token, body: { locked: true } });
    const requested = await burst(CLIENTS, (i) => follow(fans[i], shy));
    expect(tally(requested)).toEqual({ 201: CLIENTS });
    const random = randomSource(31);
    const ops: Op[] = fans.flatMap((who) => [
      {
        kind: "accept",
        who,
        run: () => server.request("POST", `/follow_requests/${who.name}/accept`, { token: shy.token, body: {} }),
      },
      { kind: "unfollow", who, run: () => unfollow(who, shy) },
    ]);
    const done = await fire(shuffled(ops, random));
    expectOutcomes(done, {
      accept: ["204", "404 FOLLOW_REQUEST_NOT_FOUND"],
      unfollow: ["204", "400 YOU_ARE_NOT_FOLLOW_ACCOUNT"],
    });
    const { db } = server.services;
    const follows = new Set(
      (await db.follow.findMany({ where: { followeeId: BigInt(shy.id) } })).map((f) => f.followerId.toString()),
    );
    // Each pair's answers tell its story: accept 404 means the withdrawal came first (and so
    // succeeded); accept 204 with unfollow 204 means the unfollow ended the new follow; accept
    // 204 with unfollow 400 means the follow stands.
    const untold = fans
      .map((who) => ({
        name: who.name,
        accepted: succeeded(done, "accept", who) === 1,
        unfollowed: succeeded(done, "unfollow", who) === 1,
        follows: follows.has(who.id),
      }))
      .filter((m) => (m.accepted ? m.follows === m.unfollowed : m.follows || !m.unfollowed));
    expect(untold).toEqual([]);
    expect(await db.followRequest.count({ where: { targetId: BigInt(shy.id) } })).toBe(0);
    await expectViewsMatchRows([shy, ...fans]);
  });
});

describe("list membership at most once (docs/timelines.md#lists)", () => {
  async function newList(owner: TestAccount, title: string, isPublic: boolean): Promise<string> {
    const answer = await server.request("POST", "/lists", { token: owner.token, body: { title, public: isPublic } });
    expect(answer.status).toBe(200);
    return answer.body.id as string;
  }
  const assign = (owner: TestAccount, listId: string, ids: string[]) =>
    server.request("POST", `/lists/${listId}`, { token: owner.token, body: { account_id: ids } });

  /** Each member is stored once, and GET /lists/{id} shows exactly the stored members. */
  async function expectAssigneesMatchRows(owner: TestAccount, listId: string): Promise<void> {
    const rows = await server.services.db.listMember.findMany({ where: { listId: BigInt(listId) } });
    expect(new Set(rows.map((r) => r.accountId)).size).toBe(rows.length);
    const shown = await server.request("GET", `/lists/${listId}`, { token: owner.token });
    expect(shown.body.assignees.map((a: { id: string }) => a.id).sort()).toEqual(
      rows.map((r) => r.accountId.toString()).sort(),
    );
  }

  it(`${CLIENTS} concurrent assignments of one member: all 200, one row, one \`listed\` notification`, async () => {
    const [owner, member] = await crowd("lone", 2);
    const listId = await newList(owner, "once", true);
    const answers = await burst(CLIENTS, () => assign(owner, listId, [member.id]));
    expect(tally(answers)).toEqual({ 200: CLIENTS });
    for (const a of answers) expect(a.body).toEqual({ account_id: [member.id] });
    const rows = await server.services.db.listMember.findMany({ where: { listId: BigInt(listId) } });
    expect(rows.map((r) => r.accountId.toString())).toEqual([member.id]);
    const shown = await server.request("GET", `/lists/${listId}`, { token: owner.token });
    expect(shown.body.assignees.map((a: { id: string }) => a.id)).toEqual([member.id]);
    const listed = await server.services.db.notification.count({ where: { type: "listed", listId: BigInt(listId) } });
    expect(listed).toBe(1);
  });

  it(`${CLIENTS} concurrent overlapping assignments of 10 members each: each member once, notified once`, async () => {
    const members = await crowd("lmany");
    const owner = members[0];
    const listId = await newList(owner, "crowded", true);
    // Request i assigns members i .. i+9 (mod 50): every member is in 10 of the 50 requests,
    // and requests near the wrap list the same members in another order.
    const window = (i: number) => Array.from({ length: 10 }, (_, k) => members[(i + k) % CLIENTS].id);
    const answers = await burst(CLIENTS, (i) => assign(owner, listId, window(i)));
    expect(tally(answers)).toEqual({ 200: CLIENTS });
    const { db } = server.services;
    expect(await db.listMember.count({ where: { listId: BigInt(listId) } })).toBe(CLIENTS);
    // Every member but the owner heard of it exactly once (no notification to oneself).
    const listed = await db.notification.groupBy({
      by: ["recipientId"],
      where: { type: "listed", listId: BigInt(listId) },
      _count: true,
    });
    expect(listed.map((n) => n._count)).toEqual(Array(CLIENTS - 1).fill(1));

    await expectAssigneesMatchRows(owner, listId);
  });

  it(`${CLIENTS} clients assigning and removing the same 30 members at once, in opposite orders, 2 rounds`, async () => {
    const members = await crowd("lrev");
    const owner = members[0];
    const listId = await newList(owner, "churning", true);
    const ids = members.slice(0, 30).map((m) => m.id);
    const reversed = [...ids].reverse();
    const random = randomSource(47);
    for (let round = 0; round < 2; round++) {
      const ops: Op[] = members.map((who, i) => {
        if (i % 3 === 2) {
          return {
            kind: "remove",
            who,
            run: () => server.request("DELETE", `/lists/${listId}`, { token: owner.token, body: { account_id: ids } }),
          };
        }
        return { kind: "assign", who, run: () => assign(owner, listId, i % 3 ? reversed : ids) };
      });
      expectOutcomes(await fire(shuffled(ops, random)), { assign: ["200"], remove: ["204"] });
      await expectAssigneesMatchRows(owner, listId);
    }
  });
});

describe("one bookmark per account per note (docs/notes.md#bookmarks)", () => {
  it(`${CLIENTS} concurrent bookmarks of one note by one account: all 200, one row; ${CLIENTS} removals: none`, async () => {
    const [author, reader] = await crowd("bmone", 2);
    const noteId = await noteOf(author, "keep me");
    const answers = await burst(CLIENTS, () => bookmark(reader, noteId));
    expect(tally(answers)).toEqual({ 200: CLIENTS });
    const { db } = server.services;
    expect(await db.bookmark.count({ where: { noteId: BigInt(noteId) } })).toBe(1);
    const listed = await server.request("GET", "/bookmarks", { token: reader.token });
    expect(listed.body.map((n: { id: string }) => n.id)).toEqual([noteId]);

    const removals = await burst(CLIENTS, () => unbookmark(reader, noteId));
    expect(tally(removals)).toEqual({ 204: CLIENTS });
    expect(await db.bookmark.count({ where: { noteId: BigInt(noteId) } })).toBe(0);
  });

  it(`${CLIENTS} accounts bookmarking and unbookmarking one note at once: at most one row each`, async () => {
    const readers = await crowd("bmmix");
    const noteId = await noteOf(readers[0], "popular");
    const random = randomSource(41);
    const ops: Op[] = readers.flatMap((who) => [
      { kind: "bookmark", who, run: () => bookmark(who, noteId) },
      { kind: "bookmark", who, run: () => bookmark(who, noteId) },
      { kind: "unbookmark", who, run: () => unbookmark(who, noteId) },
    ]);
    const done = await fire(shuffled(ops, random));
    expectOutcomes(done, { bookmark: ["200"], unbookmark: ["204"] });
    const rows = await server.services.db.bookmark.findMany({ where: { noteId: BigInt(noteId) } });
    expect(new Set(rows.map((r) => r.accountId)).size).toBe(rows.length);
    const ids = new Set(readers.map((r) => r.id));
    expect(rows.every((r) => ids.has(r.accountId.toString()))).toBe(true);
  });
});

describe("counters equal the rows they count (docs/accounts.md#shapes, docs/notes.md#deletion)", () => {
  it(`${CLIENTS} concurrent deletions of one note by its author: the note and its count go once`, async () => {
    const [author] = await crowd("delone", 1);
    await noteOf(author, "stays");
    const noteId = await noteOf(author, "goes");
    const answers = await burst(CLIENTS, () => deleteNote(author, noteId));
    const stored = await server.services.db.account.findUniqueOrThrow({ where: { id: BigInt(author.id) } });
    const [rows] = await rowsOf([author]);
    expect.soft({ notesCount: stored.notesCount, rows: rows.note_count }).toEqual({ notesCount: 1, rows: 1 });
    // One deletion deleted it; every other one found nothing to delete.
    expect.soft(tally(answers)).toEqual({ 204: 1, "404 NOTE_NOT_FOUND": CLIENTS - 1 });
  });

  it(`a note deleted while ${CLIENTS - 1} clients renote, quote, reply to, react to and bookmark it`, async () => {
    const clients = await crowd("delrace");
    const author = clients[0];
    const random = randomSource(53);
    const kinds = ["renote", "quote", "reply", "react", "bookmark"] as const;
    for (let round = 0; round < 3; round++) {
      const noteId = await noteOf(author, `doomed ${round}`);
      const ops: Op[] = clients.slice(1).map((who, i) => {
        const kind = kinds[i % kinds.length];
        const run = {
          renote: () => renote(who, noteId),
          quote: () => renote(who, noteId, "quoting"),
          reply: () => reply(who, noteId, "replying"),
          react: () => react(who, noteId),
          bookmark: () => bookmark(who, noteId),
        }[kind];
        return { kind, who, run };
      });
      const mixed = shuffled(ops, random);
      // The deletion goes out in the middle of the burst.
      mixed.splice(Math.floor(mixed.length / 2), 0, {
        kind: "delete",
        who: author,
        run: () => deleteNote(author, noteId),
      });
      const done = await fire(mixed);
      expectOutcomes(done, {
        delete: ["204"],
        renote: ["200", "404 NOTE_NOT_FOUND"],
        quote: ["200", "404 NOTE_NOT_FOUND"],
        reply: ["200", "404 NOTE_NOT_FOUND"],
        react: ["200", "404 NOTE_NOT_FOUND"],
        bookmark: ["200", "404 NOTE_NOT_FOUND"],
      });
      const { db } = server.services;
      expect(await db.note.count({ where: { id: BigInt(noteId) } })).toBe(0);
      // Plain renotes went with the note (docs/notes.md#deletion); quotes and replies that were
      // answered stay.
      const made = (kind: string) =>
        done.filter((d) => d.kind === kind && d.answer.status === 200).map((d) => d.answer.body.id as string);
      const survivors = await db.note.findMany({
        where: { id: { in: [...made("renote"), ...made("quote"), ...made("reply")].map(BigInt) } },
        select: { id: true },
      });
      const kept = new Set(survivors.map((n) => n.id.toString()));
      expect
        .soft(
          made("renote").filter((id) => kept.has(id)),
          "plain renotes that outlived their note",
        )
        .toEqual([]);
      expect(
        [...made("quote"), ...made("reply")].filter((id) => !kept.has(id)),
        "quotes and replies lost",
      ).toEqual([]);
      await expectInvariants();
    }
    await expectViewsMatchRows(clients);
  });

  it(`after 4 rounds of ${CLIENTS} concurrent mixed actions, every counter equals its rows`, async () => {
    const clients = await crowd("burst");
    const random = randomSource(67);
    const pick = <T>(items: T[]): T => items[Math.floor(random() * items.length)];
    // Every client starts with two notes; a few "hot" notes draw most of the traffic.
    const own = new Map<TestAccount, string[]>(clients.map((c) => [c, []]));
    for (let k = 0; k < 2; k++) {
      const created = await burst(CLIENTS, (i) => post(clients[i], `seed ${k} of ${clients[i].name}`));
      expect(tally(created)).toEqual({ 201: CLIENTS });
      for (const [i, a] of created.entries()) own.get(clients[i])?.push(a.body.id);
    }
    const hot = clients.slice(0, 5).map((c) => own.get(c)?.[0] as string);
    const kinds = ["note", "renote", "quote", "reply", "delete", "react", "unreact", "follow", "unfollow", "bookmark"];
    let requests = 0;
    for (let round = 0; round < 4; round++) {
      const ops: Op[] = clients.map((who) => {
        const kind = pick(kinds);
        const target = random() < 0.6 ? pick(hot) : pick(clients.flatMap((c) => own.get(c) ?? []));
        const other = pick(clients.filter((c) => c !== who));
        const mine = own.get(who) ?? [];
        const run: Record<string, () => Promise<Answer>> = {
          note: () => post(who, `round ${round}`),
          renote: () => renote(who, target),
          quote: () => renote(who, target, `quote in round ${round}`),
          reply: () => reply(who, target, `reply in round ${round}`),
          // One of its own notes, perhaps a hot one, perhaps one already gone.
          delete: () => deleteNote(who, pick(mine)),
          react: () => react(who, target),
          unreact: () => unreact(who, target),
          follow: () => follow(who, other),
          unfollow: () => unfollow(who, other),
          bookmark: () => bookmark(who, target),
        };
        return { kind, who, run: run[kind] };
      });
      const done = await fire(ops);
      requests += done.length;
      const gone = ["200", "404 NOTE_NOT_FOUND"];
      expectOutcomes(done, {
        note: ["201"],
        renote: gone,
        quote: gone,
        reply: gone,
        delete: ["204", "404 NOTE_NOT_FOUND"],
        react: [...gone, "400 ALREADY_REACTED"],
        unreact: ["204", "400 NOT_REACTED", "404 NOTE_NOT_FOUND"],
        follow: ["201", "400 ALREADY_FOLLOWING"],
        unfollow: ["204", "400 YOU_ARE_NOT_FOLLOW_ACCOUNT"],
        bookmark: gone,
      });
      for (const d of done) {
        if (d.answer.status === 200 || d.answer.status === 201) {
          if (["note", "renote", "quote", "reply"].includes(d.kind)) own.get(d.who)?.push(d.answer.body.id);
        }
      }
    }
    expect(requests).toBe(4 * CLIENTS);
    await expectViewsMatchRows(clients);
  });
});

describe("an account deleted while others act on it (docs/accounts.md#deletion)", () => {
  it(`deleted by an admin in the middle of ${CLIENTS} clients following, unfollowing and reacting to it and each other`, async () => {
    const clients = await crowd("acgone");
    const [victim, admin, ...others] = clients;
    await server.services.db.account.update({ where: { id: BigInt(admin.id) }, data: { role: "admin" } });
    const victimNotes = [await noteOf(victim, "mine 1"), await noteOf(victim, "mine 2")];
    const otherNotes = await Promise.all(others.slice(0, 5).map((o) => noteOf(o, "theirs")));
    // The scene: follows both ways, reactions both ways, bookmarks, a renote.
    await burst(others.length, (i) => (i % 2 ? follow(others[i], victim) : follow(victim, others[i])));
    await burst(others.length, (i) => react(others[i], victimNotes[i % 2]));
    await burst(otherNotes.length, (i) => react(victim, otherNotes[i]));
    await bookmark(victim, otherNotes[0]);
    await renote(others[0], victimNotes[0]);
    const random = randomSource(71);
    const ops: Op[] = others.map((who, i) => {
      const kind = (["follow", "unfollow", "react", "unreact", "followOther"] as const)[i % 5];
      const run = {
        follow: () => follow(who, victim),
        unfollow: () => unfollow(who, victim),
        react: () => react(who, victimNotes[i % 2], "🎉"),
        unreact: () => unreact(who, victimNotes[i % 2]),
        followOther: () => follow(who, others[(i + 1) % others.length]),
      }[kind];
      return { kind, who, run };
    });
    const mixed = shuffled(ops, random);
    mixed.splice(Math.floor(mixed.length / 2), 0, {
      kind: "delete",
      who: admin,
      run: () => server.request("DELETE", `/accounts/${victim.name}`, { token: admin.token }),
    });
    const done = await fire(mixed);
    const gone = ["404 ACCOUNT_NOT_FOUND"];
    expectOutcomes(done, {
      delete: ["204"],
      follow: ["201", "400 ALREADY_FOLLOWING", ...gone],
      unfollow: ["204", "400 YOU_ARE_NOT_FOLLOW_ACCOUNT", ...gone],
      react: ["200", "400 ALREADY_REACTED", "404 NOTE_NOT_FOUND"],
      unreact: ["204", "400 NOT_REACTED", "404 NOTE_NOT_FOUND"],
      followOther: ["201", "400 ALREADY_FOLLOWING"],
    });
    await runDeletions(server.services);
    const { db } = server.services;
    const id = BigInt(victim.id);
    expect(await db.accountDeletion.count({ where: { accountId: id } })).toBe(0);
    const left = await db.$queryRaw<{ follows: number; reactions: number; notes: number }[]>`
      SELECT (SELECT count(*) FROM follows WHERE follower_id = ${id} OR followee_id = ${id})::int AS follows,
        (SELECT count(*) FROM reactions WHERE account_id = ${id})::int AS reactions,
        (SELECT count(*) FROM notes WHERE author_id = ${id})::int AS notes`;
    expect(left[0]).toEqual({ follows: 0, reactions: 0, notes: 0 });
    // Others' counters: afterEach holds every one of them to its rows.
    await expectViewsMatchRows(others);
  });
});

describe("a resource deleted while others change it", () => {
  it(`${CLIENTS} concurrent deletions and renames of one list: one 204, the rest 200 or 404 LIST_NOTFOUND`, async () => {
    const [owner] = await crowd("listgone", 1);
    const created = await server.request("POST", "/lists", { token: owner.token, body: { title: "doomed" } });
    const listId = created.body.id as string;
    const answers = await burst(CLIENTS, (i) =>
      i % 2
        ? server.request("DELETE", `/lists/${listId}`, { token: owner.token })
        : server.request("PATCH", `/lists/${listId}`, { token: owner.token, body: { title: `renamed ${i}` } }),
    );
    const counts = tally(answers);
    expect(counts[204]).toBe(1);
    expect(Object.keys(counts).filter((k) => !["200", "204", "404 LIST_NOTFOUND"].includes(k))).toEqual([]);
    expect(await server.services.db.list.count({ where: { id: BigInt(listId) } })).toBe(0);
  });

  it(`${CLIENTS} concurrent deletions and updates of one drive file: one 204, the rest 200 or 404 FILE_NOT_FOUND`, async () => {
    const [owner] = await crowd("filegone", 1);
    const file = await uploadFile(server, owner, await image("png", 8, 8), "doomed.png");
    const answers = await burst(CLIENTS, (i) =>
      i % 2
        ? server.request("DELETE", `/drive/${file.id}`, { token: owner.token })
        : server.request("PUT", `/drive/${file.id}`, { token: owner.token, body: { nsfw: true } }),
    );
    const counts = tally(answers);
    expect(counts[204]).toBe(1);
    expect(Object.keys(counts).filter((k) => !["200", "204", "404 FILE_NOT_FOUND"].includes(k))).toEqual([]);
    expect(await server.services.db.driveFile.count({ where: { id: BigInt(file.id) } })).toBe(0);
  });
});
