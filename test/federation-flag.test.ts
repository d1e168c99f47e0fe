// A report about a remote account forwarded to its server (docs/federation.md#moderation): server A
// (127.0.0.2) holds a note of P's account p1 (P, 127.0.0.7, a signing peer); alice reports p1 with
// it, and a moderator forwards the report: P's shared inbox gets one `Flag`, signed by A's instance
// actor, naming p1 and the note, with the report's comment.
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
let mod: TestAccount;

beforeAll(async () => {
  a = await listening("127.0.0.2", { env: { FEDERATION_RETRY_MS: "100" } });
  peer = new SigningPeer("127.0.0.7");
  await peer.start();
  peer.serve("p1", "all");
  ({ alice } = await cast(a, { alice: "fl_alice" }));
  mod = await account(a, "fl_mod", "moderator");
}, 60_000);

afterAll(async () => {
  await peer?.stop();
  await closeFederating(a);
});

const FORWARD = `mutation ($id: ID!) {
  forwardReport(id: $id) { ... on MutationForwardReportSuccess { data } ... on DomainError { code } } }`;

// biome-ignore lint/suspicious/noExplicitAny: activities as JSON, read field by field
const flags = (): any[] => peer.posts.filter((post) => post.activity?.type === "Flag");

describe("a report forwarded to the reported account's server", () => {
  it("is a Flag of A's instance actor to P's shared inbox, naming the account and its note, with the comment", async () => {
    const p1 = `@p1@${peer.host}`;
    const noteUri = `${peer.actor("p1")}/notes/1`;
    const create = {
      id: `${noteUri}/activity`,
      type: "Create",
      to: "https://www.w3.org/ns/activitystreams#Public",
      object: {
        id: noteUri,
        type: "Note",
        attributedTo: peer.actor("p1"),
        content: "<p>spam</p>",
        to: "https://www.w3.org/ns/activitystreams#Public",
      },
    };
    // A public note is stored for its local followers.
    expect((await a.request("POST", `/accounts/${p1}/follow`, { token: alice.token, body: {} })).status).toBe(201);
    await expect.poll(() => peer.accepts.length, WAIT).toBe(1);
    await expect.poll(() => a.services.db.follow.count(), WAIT).toBe(1);
    expect(await peer.post("p1", `${a.url}/inbox`, create)).toBe(202);
    const note = await expect
      .poll(() => a.services.db.note.findUnique({ where: { uri: noteUri } }), WAIT)
      .toBeTruthy()
      .then(() => a.services.db.note.findUniqueOrThrow({ where: { uri: noteUri } }));
    const reported = await a.request("POST", `/accounts/${p1}/report`, {
      token: alice.token,
      body: { comment: "spam, again", note_ids: [note.id.toString()] },
    });
    expect(reported.status).toBe(201);
    const id = reported.body.id as string;

    // Moderators only; an unknown report is REPORT_NOT_FOUND.
    expect((await a.request("POST", `/reports/${id}/forward`, { token: alice.token, body: {} })).status).toBe(403);
    const unknown = await a.request("POST", "/reports/12345/forward", { token: mod.token, body: {} });
    expect([unknown.status, unknown.body]).toEqual([404, { error: "REPORT_NOT_FOUND" }]);
    expect(flags()).toEqual([]);

    const forwarded = await a.request("POST", `/reports/${id}/forward`, { token: mod.token, body: {} });
    expect(forwarded.status).toBe(204);
    await expect.poll(() => flags().length, WAIT).toBe(1);
    const [post] = flags();
    expect(post.verified).toBe(true);
    expect(post.path).toBe("/inbox");
    expect(post.activity).toMatchObject({
      actor: `${a.url}/accounts/_instance`,
      object: [peer.actor("p1"), noteUri],
      content: "spam, again",
    });

    // GraphQL's mutation forwards it again: a second Flag.
    const again = await gql(a, FORWARD, { id }, mod);
    expect(again.forwardReport).toEqual({ data: true });
    await expect.poll(() => flags().length, WAIT).toBe(2);
  });

  it("is INVALID_REQUEST for a report about a local account", async () => {
    const { bob } = await cast(a, { bob: "fl_bob" });
    const reported = await a.request("POST", `/accounts/${bob.name}/report`, { token: alice.token, body: {} });
    expect(reported.status).toBe(201);
    const forwarded = await a.request("POST", `/reports/${reported.body.id}/forward`, { token: mod.token, body: {} });
    expect([forwarded.status, forwarded.body]).toEqual([400, { error: "INVALID_REQUEST" }]);
    const graphql = await gql(a, FORWARD, { id: reported.body.id }, mod);
    expect(graphql.forwardReport).toEqual({ code: "INVALID_REQUEST" });
  });
});
