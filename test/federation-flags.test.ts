// A `Flag` from another server is a report (docs/federation.md#moderation): server A (127.0.0.2),
// and P (127.0.0.8), a signing peer whose instance actor flags alice and her note. The moderators
// hear of it as of a local report; REST's GET /reports shows its reporter as P's host, GraphQL's
// `reports` too; a Flag naming nothing of A's changes nothing.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cast } from "./support/cast.ts";
import { closeFederating, type ListeningServer, listening } from "./support/federation.ts";
import { account, type TestAccount } from "./support/fixtures.ts";
import { gql } from "./support/graphql.ts";
import { SigningPeer } from "./support/signing-peer.ts";

const WAIT = { timeout: 15_000, interval: 50 };

let a: ListeningServer;
let peer: SigningPeer;
let alice: TestAccount;
let bob: TestAccount;
let mod: TestAccount;
let sequence = 0;

beforeAll(async () => {
  a = await listening("127.0.0.2");
  peer = new SigningPeer("127.0.0.8");
  await peer.start();
  // Mastodon flags as its instance actor; what it is called matters not.
  peer.serve("actor", "none");
  ({ alice, bob } = await cast(a, { alice: "fg_alice", bob: "fg_bob" }));
  mod = await account(a, "fg_mod", "moderator");
}, 60_000);

afterAll(async () => {
  await peer?.stop();
  await closeFederating(a);
});

/** P's Flag of `objects`, POSTed signed to A's shared inbox, and handled. */
async function flagged(objects: string[], content: string): Promise<void> {
  const activity = { id: `${peer.url}/flags/${++sequence}`, type: "Flag", object: objects, content };
  expect(await peer.post("actor", `${a.url}/inbox`, activity)).toBe(202);
  await expect
    .poll(async () => {
      const [row] = await a.services.db.$queryRaw<{ n: number }[]>`
        SELECT count(*)::int AS n FROM federation_messages WHERE message->>'type' = 'inbox'`;
      return row.n;
    }, WAIT)
    .toBe(0);
}

async function posted(who: TestAccount, content: string): Promise<string> {
  const answer = await a.request("POST", "/notes", { token: who.token, body: { content } });
  expect(answer.status).toBe(201);
  return (answer.body as { id: string }).id;
}

const REPORTS = `{ reports { ... on ReportConnection { edges { node {
  comment noteIds reporter { name } reporterHost account { name } } } } } }`;

describe("a Flag received", () => {
  it("naming nothing of this server's is dropped", async () => {
    await flagged([peer.actor("someone"), `${peer.url}/notes/1`, `${a.url}/accounts/_instance`], "not yours");
    expect(await a.services.db.report.count()).toBe(0);
  });

  it("is a report about the local account it names, with its notes and comment, from the server that sent it", async () => {
    const note = await posted(alice, "flag me");
    const other = await posted(bob, "not alice's");
    const comment = `  spam <b>and</b> more ${"x".repeat(1100)}`;
    await flagged(
      [`${a.url}/accounts/${alice.id}`, `${a.url}/notes/${note}`, `${a.url}/notes/${other}`, `${peer.url}/notes/2`],
      comment,
    );

    const listed = await a.request("GET", "/reports", { token: mod.token });
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual([
      {
        id: expect.any(String),
        reporter: { host: peer.host },
        account: expect.objectContaining({ id: alice.id, nickname: "fg_alice" }),
        // Plain text as it came, cut to 1,000 characters; only alice's own notes are evidence.
        comment: comment.trim().slice(0, 1000),
        note_ids: [note],
        created_at: expect.any(String),
        resolved: false,
        resolved_at: null,
      },
    ]);
    const id = (listed.body as { id: string }[])[0].id;
    // The moderators hear of it as of a local report.
    const notices = await a.request("GET", "/notifications", { token: mod.token });
    expect((notices.body as { notifications: { type: string; reportId?: string }[] }).notifications).toEqual([
      expect.objectContaining({ type: "reported", reportId: id }),
    ]);
    const { reports } = await gql(a, REPORTS, {}, mod);
    expect(reports.edges.map((edge: { node: unknown }) => edge.node)).toEqual([
      {
        comment: comment.trim().slice(0, 1000),
        noteIds: [note],
        reporter: null,
        reporterHost: peer.host,
        account: { name: `@fg_alice@${new URL(a.url).host}` },
      },
    ]);

    // A local report beside it keeps its shape: its reporter is the account.
    expect((await a.request("POST", "/accounts/fg_alice/report", { token: bob.token, body: {} })).status).toBe(201);
    const both = await a.request("GET", "/reports", { token: mod.token });
    expect((both.body as { reporter: unknown }[]).map((r) => r.reporter)).toEqual([
      expect.objectContaining({ id: bob.id, nickname: "fg_bob" }),
      { host: peer.host },
    ]);
  });
});
