// Account deletion (docs/accounts.md#deletion): DELETE /accounts/{name} by the owner with its
// passphrase or by an admin; everything of the account goes, counters of others stay exact, the
// name stays reserved, old tokens are INVALID_TOKEN and the account ACCOUNT_NOT_FOUND; a big
// account is removed in batches by a leased job that another run finishes when one stops midway.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accountGone, type Prisma } from "../src/db/client.ts";
import { INLINE_BATCHES, runDeletions, startDeletionWorker } from "../src/domain/accounts/deletion.ts";
import type { Context } from "../src/domain/context.ts";
import { notify } from "../src/domain/notifications/notify.ts";
import { react } from "../src/domain/reactions/service.ts";
import { answerFor } from "../src/http/errors.ts";
import * as act from "./support/actions.ts";
import { account, PASSPHRASE, type TestAccount, uploadFile } from "./support/fixtures.ts";
import { image } from "./support/media.ts";
import { type Answer, startTestServer, type TestServer } from "./support/server.ts";
import { openSse, type SseClient } from "./support/sse.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

const ok = (answer: Answer, status: number) => expect(answer.status, JSON.stringify(answer.body)).toBe(status);

function expectError(answer: Answer, status: number, code: string): void {
  expect({ status: answer.status, body: answer.body }).toEqual({ status, body: { error: code } });
}

/** Rows anywhere that still name the account (its tombstone apart). */
async function leftovers(s: TestServer, id: string): Promise<Record<string, number>> {
  const rows = await s.services.db.$queryRawUnsafe<{ what: string; n: number }[]>(
    `SELECT 'notes' AS what, count(*)::int AS n FROM notes WHERE author_id = $1
     UNION ALL SELECT 'reactions', count(*)::int FROM reactions WHERE account_id = $1
     UNION ALL SELECT 'bookmarks', count(*)::int FROM bookmarks WHERE account_id = $1
     UNION ALL SELECT 'follows', count(*)::int FROM follows WHERE follower_id = $1 OR followee_id = $1
     UNION ALL SELECT 'follow_requests', count(*)::int FROM follow_requests WHERE requester_id = $1 OR target_id = $1
     UNION ALL SELECT 'blocks', count(*)::int FROM blocks WHERE blocker_id = $1 OR blocked_id = $1
     UNION ALL SELECT 'mutes', count(*)::int FROM mutes WHERE muter_id = $1 OR muted_id = $1
     UNION ALL SELECT 'list_members', count(*)::int FROM list_members WHERE account_id = $1
     UNION ALL SELECT 'lists', count(*)::int FROM lists WHERE owner_id = $1
     UNION ALL SELECT 'notifications', count(*)::int FROM notifications WHERE recipient_id = $1 OR actor_id = $1
     UNION ALL SELECT 'drive_files', count(*)::int FROM drive_files WHERE owner_id = $1
     UNION ALL SELECT 'sessions', count(*)::int FROM sessions WHERE account_id = $1
     UNION ALL SELECT 'email_tokens', count(*)::int FROM email_tokens WHERE account_id = $1
     UNION ALL SELECT 'account_deletions', count(*)::int FROM account_deletions WHERE account_id = $1
     UNION ALL SELECT 'stored_file_removals', count(*)::int FROM stored_file_removals WHERE account_id = $1`,
    BigInt(id),
  );
  return Object.fromEntries(rows.filter((r) => r.n > 0).map((r) => [r.what, r.n]));
}

/** Accounts whose stored counters differ from their rows, and reaction counts that differ from theirs. */
async function drift(s: TestServer): Promise<unknown[]> {
  return s.services.db.$queryRaw<unknown[]>`
    SELECT a.name FROM accounts a
    WHERE a.followers_count <> (SELECT count(*) FROM follows f WHERE f.followee_id = a.id)
       OR a.following_count <> (SELECT count(*) FROM follows f WHERE f.follower_id = a.id)
       OR a.notes_count <> (SELECT count(*) FROM notes n WHERE n.author_id = a.id)
    UNION ALL
    SELECT coalesce(k.note_id, r.note_id)::text FROM
      (SELECT note_id, emoji, sum(count) AS kept FROM note_reaction_counts GROUP BY 1, 2) k
      FULL JOIN (SELECT note_id, emoji, count(*) AS rows FROM reactions GROUP BY 1, 2) r USING (note_id, emoji)
      WHERE coalesce(k.kept, 0) <> coalesce(r.rows, 0)`;
}

const counts = async (who: TestAccount) => {
  const answer = await server.request("GET", `/accounts/${who.name}`);
  ok(answer, 200);
  return { followed: answer.body.followed_count, following: answer.body.following_count };
};

describe("DELETE /accounts/{name}", () => {
  it("removes everything of the account, keeps others' quotes and replies and their counters exact", async () => {
    const [dora, olga, pete, lucy, quinn, zed] = await Promise.all(
      ["dora", "olga", "pete", "lucy", "quinn", "zed"].map((n) => account(server, n)),
    );
    // Dora's notes, one with a file; her avatar.
    const file = await uploadFile(server, dora, await image("png", 8, 8), "me.png");
    ok(await server.request("PATCH", "/accounts/dora", { token: dora.token, body: { avatar_file_id: file.id } }), 200);
    const n1 = await act.post(server, dora, { content: "hello from dora" });
    await act.post(server, dora, { content: "with a file", attachment_file_ids: [file.id] });
    // What others did to them.
    const plain = (await server.request("POST", `/notes/${n1.id}/renote`, { token: olga.token, body: {} })).body;
    const quote = (
      await server.request("POST", `/notes/${n1.id}/renote`, { token: olga.token, body: { content: "q" } })
    ).body;
    const reply = (await server.request("POST", `/notes/${n1.id}/reply`, { token: pete.token, body: { content: "r" } }))
      .body;
    ok(await server.request("POST", `/notes/${n1.id}/bookmark`, { token: olga.token, body: {} }), 200);
    ok(await server.request("POST", `/notes/${n1.id}/reaction`, { token: pete.token, body: { emoji: "🔥" } }), 200);
    // What dora did to others' notes.
    const o1 = await act.post(server, olga, { content: "olga's" });
    ok(await server.request("POST", `/notes/${o1.id}/reaction`, { token: dora.token, body: { emoji: "👍" } }), 200);
    ok(await server.request("POST", `/notes/${o1.id}/reaction`, { token: pete.token, body: { emoji: "👍" } }), 200);
    ok(await server.request("POST", `/notes/${o1.id}/bookmark`, { token: dora.token, body: {} }), 200);
    // Follows both ways, requests both ways, blocks both ways.
    await act.follow(server, dora, olga);
    await act.follow(server, pete, dora);
    ok(await server.request("PATCH", "/accounts/lucy", { token: lucy.token, body: { locked: true } }), 200);
    expect(await act.follow(server, dora, lucy)).toEqual({ pending: true });
    ok(await server.request("PATCH", "/accounts/dora", { token: dora.token, body: { locked: true } }), 200);
    expect(await act.follow(server, quinn, dora)).toEqual({ pending: true });
    ok(await server.request("POST", "/accounts/zed/block", { token: dora.token, body: {} }), 204);
    ok(await server.request("POST", "/accounts/dora/block", { token: quinn.token, body: {} }), 204);
    // Mutes both ways.
    ok(await server.request("POST", "/accounts/zed/mute", { token: dora.token, body: {} }), 204);
    ok(await server.request("POST", "/accounts/dora/mute", { token: pete.token, body: {} }), 204);
    // Her list with olga in it, and olga's public list with her in it.
    const own = (await server.request("POST", "/lists", { token: dora.token, body: { title: "mine" } })).body;
    ok(await server.request("POST", `/lists/${own.id}`, { token: dora.token, body: { account_id: [olga.id] } }), 200);
    const theirs = (await server.request("POST", "/lists", { token: olga.token, body: { title: "o", public: true } }))
      .body;
    ok(
      await server.request("POST", `/lists/${theirs.id}`, {
        token: olga.token,
        body: { account_id: [dora.id, pete.id] },
      }),
      200,
    );
    const before = { olga: await counts(olga), pete: await counts(pete) };
    expect(before).toEqual({ olga: { followed: 1, following: 0 }, pete: { followed: 0, following: 1 } });
    expect(Object.keys(await leftovers(server, dora.id)).sort()).toEqual(
      [
        "blocks",
        "bookmarks",
        "drive_files",
        "follow_requests",
        "follows",
        "list_members",
        "lists",
        "mutes",
        "notes",
        "notifications",
        "reactions",
        "sessions",
      ].sort(),
    );
    const stored = [file.id, `${file.id}.thumbnail`];
    for (const key of stored) expect(await server.services.storage.exists(key)).toBe(true);

    ok(await server.request("DELETE", "/accounts/dora", { token: dora.token, body: { passphrase: PASSPHRASE } }), 204);

    expect(await leftovers(server, dora.id)).toEqual({});
    for (const key of stored) expect(await server.services.storage.exists(key)).toBe(false);
    // The plain renote went with its note; the quote and the reply stay, pointing nowhere.
    expectError(await server.request("GET", `/notes/${plain.id}`), 404, "NOTE_NOT_FOUND");
    const keptQuote = await server.request("GET", `/notes/${quote.id}`);
    ok(keptQuote, 200);
    expect(keptQuote.body.renote_id).toBeUndefined();
    const keptReply = await server.request("GET", `/notes/${reply.id}`);
    ok(keptReply, 200);
    expect(keptReply.body.reply_to).toBeUndefined();
    // Others' counters: olga lost a follower, pete a followee, olga's note a reaction.
    expect({ olga: await counts(olga), pete: await counts(pete) }).toEqual({
      olga: { followed: 0, following: 0 },
      pete: { followed: 0, following: 0 },
    });
    const olgaNote = await server.request("GET", `/notes/${o1.id}`);
    expect([olgaNote.body.reaction_count, olgaNote.body.reaction_counts]).toEqual([1, { "👍": 1 }]);
    expect(await drift(server)).toEqual([]);
    // Olga's list lost an assignee; pete's list membership stays.
    const list = await server.request("GET", `/lists/${theirs.id}`, { token: olga.token });
    expect(list.body.assignees.map((a: { id: string }) => a.id)).toEqual([pete.id]);
    // Olga's bookmark of dora's note went with the note.
    const bookmarks = await server.request("GET", "/bookmarks", { token: olga.token });
    expect(bookmarks.body).toEqual([]);
    expect(zed.id).toBeTruthy();
  });

  it("reserves the name, refuses old tokens and the login, and the account is ACCOUNT_NOT_FOUND everywhere", async () => {
    const gone = await account(server, "gone");
    const other = await account(server, "other");
    ok(await server.request("DELETE", "/accounts/gone", { token: gone.token, body: { passphrase: PASSPHRASE } }), 204);

    for (const name of ["gone", "GONE", "Gone"]) {
      const again = await server.request("POST", "/accounts", {
        body: { name, email: `${name}-again@example.com`, passphrase: PASSPHRASE, captcha_token: "ok" },
      });
      expectError(again, 409, "ACCOUNT_NAME_IN_USE");
    }
    // Its e-mail was personal data: it is free again.
    ok(
      await server.request("POST", "/accounts", {
        body: { name: "gone2", email: gone.email, passphrase: PASSPHRASE, captcha_token: "ok" },
      }),
      200,
    );
    expectError(await server.request("GET", "/timeline/home", { token: gone.token }), 401, "INVALID_TOKEN");
    expectError(await server.request("GET", "/accounts/other", { token: gone.token }), 401, "INVALID_TOKEN");
    expectError(
      await server.request("POST", "/refresh", { body: { refresh_token: gone.refreshToken } }),
      400,
      "INVALID_TOKEN",
    );
    expectError(
      await server.request("POST", "/login", { body: { name: "gone", passphrase: PASSPHRASE, captcha_token: "ok" } }),
      400,
      "FAILED_TO_LOGIN",
    );
    for (const segment of ["gone", gone.id, "@gone@murmur.test"]) {
      expectError(await server.request("GET", `/accounts/${segment}`), 404, "ACCOUNT_NOT_FOUND");
    }
    expectError(
      await server.request("POST", "/accounts/gone/follow", { token: other.token, body: {} }),
      404,
      "ACCOUNT_NOT_FOUND",
    );
    expectError(await server.request("GET", "/accounts/gone/followers"), 404, "ACCOUNT_NOT_FOUND");
    const list = (await server.request("POST", "/lists", { token: other.token, body: { title: "l" } })).body;
    expectError(
      await server.request("POST", `/lists/${list.id}`, { token: other.token, body: { account_id: [gone.id] } }),
      404,
      "ACCOUNT_NOT_FOUND",
    );
    expectError(
      await server.request("DELETE", "/accounts/gone", { token: other.token, body: { passphrase: PASSPHRASE } }),
      404,
      "ACCOUNT_NOT_FOUND",
    );
  });

  it("is its owner's with the right passphrase, or an admin's: anyone else, or no or a wrong passphrase, is 403", async () => {
    const [vic, mal, mod, boss] = await Promise.all([
      account(server, "vic"),
      account(server, "mal"),
      account(server, "mod", "moderator"),
      account(server, "boss", "admin"),
    ]);
    expectError(
      await server.request("DELETE", "/accounts/vic", { body: { passphrase: PASSPHRASE } }),
      401,
      "UNAUTHORIZED",
    );
    expectError(await server.request("DELETE", "/accounts/vic", { token: vic.token }), 403, "NO_PERMISSION");
    expectError(
      await server.request("DELETE", "/accounts/vic", { token: vic.token, body: { passphrase: "wrong-passphrase" } }),
      403,
      "NO_PERMISSION",
    );
    expectError(
      await server.request("DELETE", "/accounts/vic", { token: mal.token, body: { passphrase: PASSPHRASE } }),
      403,
      "NO_PERMISSION",
    );
    expectError(await server.request("DELETE", "/accounts/vic", { token: mod.token }), 403, "NO_PERMISSION");
    expectError(
      await server.request("DELETE", "/accounts/nobody-here", { token: boss.token }),
      404,
      "ACCOUNT_NOT_FOUND",
    );
    ok(await server.request("GET", "/accounts/vic"), 200);
    // An admin needs no passphrase for another account; not for another admin.
    ok(await server.request("DELETE", "/accounts/vic", { token: boss.token }), 204);
    expectError(await server.request("GET", "/accounts/vic"), 404, "ACCOUNT_NOT_FOUND");
    const boss2 = await account(server, "boss2", "admin");
    expectError(await server.request("DELETE", "/accounts/boss2", { token: boss.token }), 403, "NO_PERMISSION");
    expectError(await server.request("DELETE", "/accounts/boss", { token: boss.token }), 403, "NO_PERMISSION");
    ok(
      await server.request("DELETE", "/accounts/boss2", { token: boss2.token, body: { passphrase: PASSPHRASE } }),
      204,
    );
  });

  it("GraphQL deleteAccount: the same service and codes", async () => {
    const gina = await account(server, "gina");
    const gql = (query: string, variables: Record<string, unknown>) =>
      server.request("POST", "/graphql", { token: gina.token, body: { query, variables } });
    const mutation = `mutation ($name: String!, $passphrase: String) {
      deleteAccount(name: $name, passphrase: $passphrase) {
        __typename ... on DomainError { code } ... on MutationDeleteAccountSuccess { data } } }`;
    const wrong = await gql(mutation, { name: "gina", passphrase: "not-the-passphrase" });
    expect(wrong.body.data.deleteAccount).toEqual({ __typename: "DomainError", code: "NO_PERMISSION" });
    const right = await gql(mutation, { name: "gina", passphrase: PASSPHRASE });
    expect(right.body.data.deleteAccount).toEqual({ __typename: "MutationDeleteAccountSuccess", data: true });
    expect(await leftovers(server, gina.id)).toEqual({});
    const after = await gql("{ viewer { __typename } }", {});
    expect(after.status).toBe(401);
    expect(after.body.errors[0].extensions.code).toBe("INVALID_TOKEN");
  });

  it("GraphQL: only the owner with its passphrase or an admin; afterwards the name is reserved and the account gone", async () => {
    const [hugo, ivan, root] = await Promise.all([
      account(server, "hugo"),
      account(server, "ivan"),
      account(server, "root", "admin"),
    ]);
    const gql = async (query: string, variables: Record<string, unknown>, who?: TestAccount) => {
      const answer = await server.request("POST", "/graphql", { token: who?.token, body: { query, variables } });
      expect(answer.body.errors, JSON.stringify(answer.body.errors)).toBeUndefined();
      return answer.body.data;
    };
    const DELETE = `mutation ($name: String!, $passphrase: String) {
      deleteAccount(name: $name, passphrase: $passphrase) {
        ... on DomainError { code } ... on MutationDeleteAccountSuccess { data } } }`;
    const deleteAs = async (who: TestAccount, name: string, passphrase?: string) =>
      (await gql(DELETE, { name, passphrase }, who)).deleteAccount;
    expect(await deleteAs(hugo, "hugo")).toEqual({ code: "NO_PERMISSION" });
    expect(await deleteAs(ivan, "hugo", PASSPHRASE)).toEqual({ code: "NO_PERMISSION" });
    expect(await deleteAs(root, "nobody-here")).toEqual({ code: "ACCOUNT_NOT_FOUND" });
    const anonymous = await server.request("POST", "/graphql", {
      body: { query: DELETE, variables: { name: "hugo", passphrase: PASSPHRASE } },
    });
    expect([anonymous.status, anonymous.body.errors[0].extensions.code]).toEqual([401, "UNAUTHORIZED"]);
    // An admin, without a passphrase.
    expect(await deleteAs(root, "hugo")).toEqual({ data: true });
    expect(await leftovers(server, hugo.id)).toEqual({});
    const CREATE = `mutation ($name: String!) {
      createAccount(input: { name: $name, email: "hugo-again@example.com", passphrase: "correct-horse-battery", captchaToken: "ok" }) {
        __typename ... on DomainError { code } } }`;
    expect((await gql(CREATE, { name: "HUGO" })).createAccount).toEqual({
      __typename: "DomainError",
      code: "ACCOUNT_NAME_IN_USE",
    });
    for (const name of ["hugo", hugo.id]) {
      expect(
        (await gql("query ($name: String!) { account(name: $name) { ... on DomainError { code } } }", { name }, ivan))
          .account,
      ).toEqual({ code: "ACCOUNT_NOT_FOUND" });
    }
    expect((await gql('mutation { follow(name: "hugo") { ... on DomainError { code } } }', {}, ivan)).follow).toEqual({
      code: "ACCOUNT_NOT_FOUND",
    });
    const login = await gql(
      'mutation { login(name: "hugo", passphrase: "correct-horse-battery", captchaToken: "ok") { ... on DomainError { code } } }',
      {},
    );
    expect(login.login).toEqual({ code: "FAILED_TO_LOGIN" });
    const refresh = await gql("mutation ($t: String!) { refresh(refreshToken: $t) { ... on DomainError { code } } }", {
      t: hugo.refreshToken,
    });
    expect(refresh.refresh).toEqual({ code: "INVALID_TOKEN" });
  });
});

describe("writes racing the deletion", () => {
  /** Backends of this database waiting for a row lock. */
  const lockWaits = async () =>
    (
      await server.services.db.$queryRaw<{ n: number }[]>`
        SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock'`
    )[0].n;
  async function untilSomeoneWaits(): Promise<void> {
    const deadline = Date.now() + 10_000;
    while ((await lockWaits()) === 0) {
      if (Date.now() > deadline) throw new Error("nobody waits for a lock");
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
  /** A transaction that runs `first`, then holds its locks until `release` is called. */
  function holding(first: (tx: Prisma.TransactionClient) => Promise<unknown>) {
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let began!: () => void;
    const ready = new Promise<void>((resolve) => {
      began = resolve;
    });
    const done = server.services.db.$transaction(
      async (tx) => {
        await first(tx);
        began();
        await released;
      },
      { timeout: 30_000 },
    );
    return { ready, release, done };
  }

  it("a row naming the account, written by a request that read it alive, is refused once it is deleted; a notification is left out", async () => {
    const victim = await account(server, "racedone");
    const other = await account(server, "racer");
    const note = await act.post(server, other, { content: "to bookmark" });
    const list = (await server.request("POST", "/lists", { token: other.token, body: { title: "l" } })).body;
    ok(
      await server.request("DELETE", "/accounts/racedone", { token: victim.token, body: { passphrase: PASSPHRASE } }),
      204,
    );
    const { db } = server.services;
    const [v, o] = [BigInt(victim.id), BigInt(other.id)];
    const writes: Record<string, () => Promise<unknown>> = {
      follow: () => db.follow.create({ data: { followerId: o, followeeId: v } }),
      followed: () => db.follow.create({ data: { followerId: v, followeeId: o } }),
      request: () => db.followRequest.create({ data: { requesterId: o, targetId: v } }),
      block: () => db.block.create({ data: { blockerId: o, blockedId: v } }),
      mute: () => db.mute.create({ data: { muterId: o, mutedId: v } }),
      member: () => db.listMember.create({ data: { listId: BigInt(list.id), accountId: v } }),
      bookmark: () => db.bookmark.create({ data: { accountId: v, noteId: BigInt(note.id) } }),
      note: () => db.note.create({ data: { id: server.services.ids.next(), authorId: v, content: "late" } }),
      list: () => db.list.create({ data: { id: server.services.ids.next(), ownerId: v, title: "late" } }),
    };
    for (const [what, write] of Object.entries(writes)) {
      const err = await write().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(accountGone(err), what).toBe(true);
      expect(answerFor(err), what).toMatchObject({ status: 404, code: "ACCOUNT_NOT_FOUND" });
    }
    // A reaction checks in its own statement: the caller's token was read before the deletion.
    const gone = await db.account.findUniqueOrThrow({ where: { id: v } });
    const ctx = { ...server.services, caller: { account: { ...gone, deletedAt: null, frozen: false } } } as Context;
    await expect(react(ctx, note.id, "👍")).rejects.toMatchObject({ code: "INVALID_TOKEN", credentials: true });
    // In a transaction (a follow's, with its counters and notice), the domain's own error.
    await expect(
      db.$transaction((tx) => tx.follow.create({ data: { followerId: o, followeeId: v } })),
    ).rejects.toMatchObject({ code: "ACCOUNT_NOT_FOUND" });
    // A notice to or from it is left out; what caused it stands.
    await db.$transaction((tx) =>
      Promise.all([
        notify(server.services, tx, { recipientId: v, actorId: o, type: "followed" }),
        notify(server.services, tx, { recipientId: o, actorId: v, type: "followed" }),
      ]),
    );
    expect(await leftovers(server, victim.id)).toEqual({});
  });

  it("the last batch waits for a write that locked the account before it, and removes its row", async () => {
    const victim = await account(server, "raceearly");
    const other = await account(server, "racer2");
    const list = (await server.request("POST", "/lists", { token: other.token, body: { title: "l" } })).body;
    const write = holding((tx) =>
      tx.listMember.create({ data: { listId: BigInt(list.id), accountId: BigInt(victim.id) } }),
    );
    await write.ready;
    const deletion = server.request("DELETE", "/accounts/raceearly", {
      token: victim.token,
      body: { passphrase: PASSPHRASE },
    });
    await untilSomeoneWaits();
    write.release();
    await write.done;
    ok(await deletion, 204);
    expect(await leftovers(server, victim.id)).toEqual({});
  });

  it("a write that comes while the last batch holds the account waits for it, then is refused", async () => {
    const victim = await account(server, "racelate");
    const other = await account(server, "racer3");
    const list = (await server.request("POST", "/lists", { token: other.token, body: { title: "l" } })).body;
    const v = BigInt(victim.id);
    // The batch's lock and what the mark wrote, as the job holds them.
    const batch = holding(async (tx) => {
      await tx.$queryRaw`SELECT id FROM accounts WHERE id = ${v} FOR UPDATE`;
      await tx.account.update({ where: { id: v }, data: { deletedAt: new Date() } });
    });
    await batch.ready;
    const write = server.services.db.listMember.create({ data: { listId: BigInt(list.id), accountId: v } }).then(
      () => "written",
      (err: unknown) => (accountGone(err) ? "refused" : err),
    );
    await untilSomeoneWaits();
    batch.release();
    await batch.done;
    expect(await write).toBe("refused");
    expect(await server.services.db.listMember.count({ where: { accountId: v } })).toBe(0);
  });
});

describe("live streams", () => {
  it("hear `delete` for each of the account's notes, and the account's own streams end", async () => {
    const [lea, max] = [await account(server, "lea"), await account(server, "max")];
    await act.follow(server, max, lea);
    const shown = [
      (await act.post(server, lea, { content: "one" })).id,
      (await act.post(server, lea, { content: "two" })).id,
    ];
    const followersOnly = (await act.post(server, lea, { content: "three", visibility: "followers" })).id;
    const address = await server.app.listen({ port: 0, host: "127.0.0.1" });
    const streams: SseClient[] = [];
    try {
      const open = async (path: string, who?: TestAccount) => {
        const stream = await openSse(`${address}${path}`, who ? { authorization: `Bearer ${who.token}` } : {});
        streams.push(stream);
        expect(stream.status).toBe(200);
        return stream;
      };
      const global = await open("/streaming/global");
      const maxHome = await open("/streaming/home", max);
      const own = [await open("/streaming/home", lea), await open("/streaming/notifications", lea)];
      let ended = 0;
      for (const s of own) void s.ended.then(() => ended++);

      ok(await server.request("DELETE", "/accounts/lea", { token: lea.token, body: { passphrase: PASSPHRASE } }), 204);

      const deleted = async (stream: SseClient, n: number) => {
        await stream.event(n - 1);
        expect(stream.events.every((e) => e.event === "delete")).toBe(true);
        return stream.events.map((e) => JSON.parse(e.data).id).sort();
      };
      expect(await deleted(global, shown.length)).toEqual([...shown].sort());
      expect(await deleted(maxHome, shown.length + 1)).toEqual([...shown, followersOnly].sort());
      await Promise.race([
        Promise.all(own.map((s) => s.ended)),
        new Promise((_, reject) => setTimeout(() => reject(new Error(`${ended} of 2 streams ended`)), 5_000)),
      ]);
      // Nothing more came: one event a note.
      expect([global.events.length, maxHome.events.length]).toEqual([shown.length, shown.length + 1]);
    } finally {
      for (const s of streams) s.close();
    }
  });
});

describe("a big account", () => {
  const NOTES = 3_000;
  const BATCH = 100;
  let big: TestServer;
  beforeAll(async () => {
    big = await startTestServer({ ACCOUNT_DELETION_BATCH: String(BATCH) });
  });
  afterAll(() => big?.close());

  it(`${NOTES} notes go in batches of ${BATCH}; hidden at once; a run stopped midway is finished by the next`, async () => {
    const owner = await account(big, "heavy");
    const reader = await account(big, "reader");
    await act.follow(big, reader, owner);
    const { db, ids } = big.services;
    const authorId = BigInt(owner.id);
    const noteIds = Array.from({ length: NOTES }, () => ids.next());
    await db.note.createMany({ data: noteIds.map((id, i) => ({ id, authorId, content: `note ${i}` })) });
    await db.account.update({ where: { id: authorId }, data: { notesCount: NOTES } });
    const someNote = noteIds[NOTES - 1].toString();
    ok(await big.request("GET", `/notes/${someNote}`), 200);

    ok(await big.request("DELETE", "/accounts/heavy", { token: owner.token, body: { passphrase: PASSPHRASE } }), 204);
    // The request ran INLINE_BATCHES batches, each of BATCH notes; the rest waits for the job.
    const left = () => db.note.count({ where: { authorId } });
    expect(await left()).toBe(NOTES - INLINE_BATCHES * BATCH);
    // Gone at once from every reader all the same: a note, the timelines, search.
    expectError(await big.request("GET", `/notes/${someNote}`), 404, "NOTE_NOT_FOUND");
    const home = await big.request("GET", "/timeline/home", { token: reader.token });
    expect(home.body).toEqual([]);
    const global = await big.request("GET", "/timeline/global");
    expect(global.body).toEqual([]);
    const found = await big.request("GET", "/search/notes?query=note", { token: reader.token });
    expect(found.body).toEqual([]);
    // And for moderators, who see a frozen author's notes.
    const mod = await account(big, "watcher", "moderator");
    expectError(await big.request("GET", `/notes/${someNote}`, { token: mod.token }), 404, "NOTE_NOT_FOUND");
    expect((await big.request("GET", "/timeline/global", { token: mod.token })).body).toEqual([]);

    // An instance runs one batch and dies, its lease held: nobody takes the job meanwhile.
    expect(await runDeletions(big.services, { maxBatches: 1, abandon: true })).toEqual({ finished: 0, batches: 1 });
    expect(await left()).toBe(NOTES - (INLINE_BATCHES + 1) * BATCH);
    expect(await runDeletions(big.services)).toEqual({ finished: 0, batches: 0 });
    // Its lease expires; the next instance's worker, at its start, finishes the job.
    await db.$executeRaw`UPDATE account_deletions SET lease_until = now() - interval '1 second'`;
    const worker = startDeletionWorker(big.services);
    const deadline = Date.now() + 30_000;
    while ((await db.accountDeletion.count()) > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await worker.stop();
    expect(await leftovers(big, owner.id)).toEqual({});
    expect(await counts2(big, reader)).toEqual({ following: 0 });
    expect(await drift(big)).toEqual([]);
  });
});

async function counts2(s: TestServer, who: TestAccount) {
  const answer = await s.request("GET", `/accounts/${who.name}`);
  return { following: answer.body.following_count };
}
