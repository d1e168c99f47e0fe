// The conversation bench/misskey/peer.sh runs between a real Misskey and Murmur, through both
// servers' own APIs (Misskey's /api/*, Murmur's REST): follows both ways, notes, replies,
// reactions (a Misskey custom emoji included), renotes, quotes and deletions, each check printed
// as it ends. Not part of the test suite: it needs a Misskey built from source (docs/federation.md,
// "Checking against Misskey").
//
//   MISSKEY_URL=http://127.0.0.5 MURMUR_URL=http://127.0.0.6 \
//     MURMUR_PASSPHRASE=... npx tsx bench/misskey/check.ts
//
// Expects a fresh Misskey (its first admin is created here) and a Murmur account `alice` made by
// the script with MURMUR_PASSPHRASE. Exits 1 when a check failed.

const MISSKEY = (process.env.MISSKEY_URL ?? "http://127.0.0.5").replace(/\/$/, "");
const MURMUR = (process.env.MURMUR_URL ?? "http://127.0.0.6").replace(/\/$/, "");
const PASSPHRASE = process.env.MURMUR_PASSPHRASE ?? "correct-horse-battery";
/** How long one federated effect may take to show on the other side. */
const WAIT_MS = Number(process.env.CHECK_WAIT_MS ?? 30_000);

const misskeyHost = new URL(MISSKEY).host;
const murmurHost = new URL(MURMUR).host;
const run = Date.now().toString(36);

// A 1x1 PNG: the custom emoji's image.
const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
  "base64",
);

type Json = Record<string, unknown> & { id?: string };

async function mk<T = Json>(endpoint: string, body: Record<string, unknown>, token?: string): Promise<T> {
  const res = await fetch(`${MISSKEY}/api/${endpoint}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(token ? { i: token, ...body } : body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`misskey ${endpoint}: ${res.status} ${text.slice(0, 300)}`);
  return (text ? JSON.parse(text) : {}) as T;
}

async function mu<T = Json>(method: string, path: string, token?: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(`${MURMUR}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok)
    throw Object.assign(new Error(`murmur ${method} ${path}: ${res.status} ${text.slice(0, 300)}`), {
      status: res.status,
    });
  return (text ? JSON.parse(text) : {}) as T;
}

/** Polls `probe` until it gives something truthy; the last error or value says why not. */
async function until<T>(probe: () => Promise<T | undefined | null | false>, ms = WAIT_MS): Promise<T> {
  const end = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value) return value;
      last = value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > end)
      throw new Error(
        `not within ${ms / 1000} s (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`,
      );
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

const results: { name: string; ok: boolean; detail: string }[] = [];

/** Runs one check and prints its result; what `body` returns (a string) is printed with it. */
async function check(name: string, body: () => Promise<unknown>) {
  const started = Date.now();
  try {
    const out = await body();
    const detail = typeof out === "string" ? out : "";
    results.push({ name, ok: true, detail });
    console.log(`PASS ${name} (${((Date.now() - started) / 1000).toFixed(1)} s)${detail ? `: ${detail}` : ""}`);
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    results.push({ name, ok: false, detail });
    console.log(`FAIL ${name}: ${detail}`);
  }
}

type MkNote = {
  id: string;
  uri?: string | null;
  text?: string | null;
  cw?: string | null;
  replyId?: string | null;
  renoteId?: string | null;
};
type MuNote = {
  id: string;
  content: string;
  cw_comment?: string;
  renote_id?: string;
  reply_to?: string;
  reactions?: { emoji: string; reacted_by: string }[];
  reaction_counts?: Record<string, number>;
  author?: { name: string };
};

/** Misskey's copy of a Murmur note, found by its URI in `mkUser`'s home timeline (delivered, not fetched). */
async function misskeyCopy(token: string, uri: string): Promise<MkNote | undefined> {
  const notes = await mk<MkNote[]>("notes/timeline", { limit: 100 }, token);
  return notes.find((n) => n.uri === uri);
}

/** Murmur's copy of a Misskey note, found in alice's home timeline by a marker in its text. */
async function murmurCopy(token: string, marker: string, extra: (n: MuNote) => boolean = () => true) {
  const notes = await mu<MuNote[]>("GET", "/timeline/home", token);
  return notes.find((n) => n.content.includes(marker) && extra(n));
}

async function main() {
  console.log(`Misskey ${MISSKEY}, Murmur ${MURMUR}`);
  const meta = await mk<{ version: string }>("meta", {});
  console.log(`Misskey version ${meta.version}`);

  // Misskey: its first admin (a fresh instance takes it without a token), then a custom emoji.
  const admin = await mk<{ id: string; token: string }>("admin/accounts/create", {
    username: "mk",
    password: "misskey-pass-1234",
  });
  const mkToken = admin.token;
  // A fresh Misskey (2025.x on) federates with nobody until its admin says so.
  await mk("admin/update-meta", { federation: "all" }, mkToken);
  const form = new FormData();
  form.set("i", mkToken);
  form.set("file", new Blob([PNG], { type: "image/png" }), "blobcat.png");
  const uploaded = await fetch(`${MISSKEY}/api/drive/files/create`, { method: "POST", body: form });
  if (!uploaded.ok) throw new Error(`misskey drive/files/create: ${uploaded.status} ${await uploaded.text()}`);
  const file = (await uploaded.json()) as { id: string };
  await mk("admin/emoji/add", { name: "blobcat", fileId: file.id }, mkToken);

  const login = await mu<{ authorization_token: string }>("POST", "/login", undefined, {
    name: "alice",
    passphrase: PASSPHRASE,
    captcha_token: "ok",
  });
  const muToken = login.authorization_token;

  let aliceOnMisskey: { id: string } | undefined;
  let mkOnMurmur: { id: string } | undefined;

  await check("Misskey resolves @alice@murmur (WebFinger over http, actor)", async () => {
    aliceOnMisskey = await mk<{ id: string; username: string }>(
      "users/show",
      { username: "alice", host: murmurHost },
      mkToken,
    );
    return `Misskey user ${aliceOnMisskey.id}`;
  });
  await check("Murmur resolves @mk@misskey", async () => {
    mkOnMurmur = await mu<{ id: string; name: string }>("GET", `/accounts/@mk@${misskeyHost}`, muToken);
    return `Murmur account ${mkOnMurmur.id}`;
  });

  await check("Misskey follows Murmur (Follow, Accept)", async () => {
    if (!aliceOnMisskey) throw new Error("alice not resolved");
    const userId = aliceOnMisskey.id;
    await mk("following/create", { userId }, mkToken);
    await until(
      async () => (await mu<{ followed_count: number }>("GET", "/accounts/alice", muToken)).followed_count === 1,
    );
    // Misskey pends a follow of a remote account until its Accept comes.
    await until(async () => {
      const relation = await mk<{ isFollowing: boolean } | { isFollowing: boolean }[]>(
        "users/relation",
        { userId },
        mkToken,
      );
      return (Array.isArray(relation) ? relation[0] : relation)?.isFollowing;
    });
  });

  await check("Murmur follows Misskey (Follow, Accept)", async () => {
    const answer = await mu<{ pending?: boolean }>("POST", `/accounts/@mk@${misskeyHost}/follow`, muToken, {});
    await until(
      async () => (await mu<{ following_count: number }>("GET", "/accounts/alice", muToken)).following_count === 1,
    );
    await until(async () => {
      const followers = await mk<{ followerId: string }[]>("users/followers", { userId: admin.id }, mkToken);
      return followers.some((f) => f.followerId === aliceOnMisskey?.id);
    });
    return `first answer pending=${answer.pending}`;
  });

  // Murmur -> Misskey: a note, then what Misskey does to it.
  let aliceNote: MuNote | undefined;
  let aliceNoteOnMisskey: MkNote | undefined;
  await check("note Murmur -> Misskey (Create)", async () => {
    aliceNote = await mu<MuNote>("POST", "/notes", muToken, { content: `hello from murmur ${run}` });
    const uri = `${MURMUR}/notes/${aliceNote.id}`;
    aliceNoteOnMisskey = await until(() => misskeyCopy(mkToken, uri));
    return `Misskey note ${aliceNoteOnMisskey.id}: ${JSON.stringify(aliceNoteOnMisskey.text)}`;
  });

  const mkReplyMarker = `reply from misskey ${run}`;
  let mkReplyOnMurmur: MuNote | undefined;
  await check("reply Misskey -> Murmur (inReplyTo)", async () => {
    if (!aliceNoteOnMisskey || !aliceNote) throw new Error("no note to reply to");
    await mk("notes/create", { text: mkReplyMarker, replyId: aliceNoteOnMisskey.id }, mkToken);
    const parent = aliceNote.id;
    mkReplyOnMurmur = await until(() => murmurCopy(muToken, mkReplyMarker));
    if (mkReplyOnMurmur.reply_to !== parent)
      throw new Error(`arrived with reply_to ${mkReplyOnMurmur.reply_to}, not ${parent}`);
  });

  await check("custom emoji reaction Misskey -> Murmur (Like + Emoji tag)", async () => {
    if (!aliceNoteOnMisskey || !aliceNote) throw new Error("no note to react to");
    await mk("notes/reactions/create", { noteId: aliceNoteOnMisskey.id, reaction: ":blobcat:" }, mkToken);
    const id = aliceNote.id;
    const note = await until(async () => {
      const n = await mu<MuNote>("GET", `/notes/${id}`, muToken);
      return n.reactions?.length ? n : undefined;
    });
    const emoji = note.reactions?.map((r) => r.emoji) ?? [];
    if (emoji.some((e) => e.includes("blobcat"))) return JSON.stringify(emoji);
    // Murmur shows only its own custom emoji: another server's is stored as a heart (docs/federation.md).
    if (emoji.includes("❤️"))
      return `arrived, shown as ${JSON.stringify(emoji)} (Murmur's fallback for another server's custom emoji)`;
    throw new Error(`reactions ${JSON.stringify(emoji)}`);
  });

  await check("renote Misskey -> Murmur (Announce)", async () => {
    if (!aliceNoteOnMisskey || !aliceNote) throw new Error("no note to renote");
    await mk("notes/create", { renoteId: aliceNoteOnMisskey.id }, mkToken);
    await until(async () => {
      const page = await mu<{ notifications: { type: string }[] }>(
        "GET",
        "/notifications?include_read=true&limit=50",
        muToken,
      );
      return page.notifications.some((n) => n.type === "renoted");
    });
  });

  const mkQuoteMarker = `quote from misskey ${run}`;
  await check("quote Misskey -> Murmur (_misskey_quote)", async () => {
    if (!aliceNoteOnMisskey || !aliceNote) throw new Error("no note to quote");
    await mk("notes/create", { text: mkQuoteMarker, renoteId: aliceNoteOnMisskey.id }, mkToken);
    const parent = aliceNote.id;
    const quote = await until(() => murmurCopy(muToken, mkQuoteMarker));
    if (quote.renote_id !== parent) throw new Error(`arrived with renote_id ${quote.renote_id}, not ${parent}`);
  });

  // Misskey -> Murmur: a note, then what Murmur does to it.
  const mkMarker = `hello from misskey ${run}`;
  let mkNote: MkNote | undefined;
  let mkNoteOnMurmur: MuNote | undefined;
  await check("note Misskey -> Murmur (Create)", async () => {
    mkNote = (await mk<{ createdNote: MkNote }>("notes/create", { text: mkMarker }, mkToken)).createdNote;
    mkNoteOnMurmur = await until(() => murmurCopy(muToken, mkMarker));
    return `Murmur note ${mkNoteOnMurmur.id}: ${JSON.stringify(mkNoteOnMurmur.content)}`;
  });

  const muReplyMarker = `reply from murmur ${run}`;
  await check("reply Murmur -> Misskey (inReplyTo)", async () => {
    if (!mkNote || !mkNoteOnMurmur) throw new Error("no note to reply to");
    await mu("POST", `/notes/${mkNoteOnMurmur.id}/reply`, muToken, { content: muReplyMarker });
    const noteId = mkNote.id;
    await until(async () => {
      const children = await mk<MkNote[]>("notes/children", { noteId, limit: 100 }, mkToken);
      return children.find((n) => n.text?.includes(muReplyMarker) && n.replyId === noteId);
    });
  });

  await check("reaction Murmur -> Misskey (Like)", async () => {
    if (!mkNote || !mkNoteOnMurmur) throw new Error("no note to react to");
    await mu("POST", `/notes/${mkNoteOnMurmur.id}/reaction`, muToken, { emoji: "👍" });
    const noteId = mkNote.id;
    const reactions = await until(async () => {
      const list = await mk<{ type: string; user: { host: string | null } }[]>("notes/reactions", { noteId }, mkToken);
      return list.length ? list : undefined;
    });
    return JSON.stringify(reactions.map((r) => `${r.type} by @${r.user.host}`));
  });

  const muEmoji = process.env.MURMUR_EMOJI_ID;
  await check("custom emoji reaction Murmur -> Misskey (Like + Emoji tag)", async () => {
    if (!muEmoji) throw new Error("MURMUR_EMOJI_ID not given (peer.sh adds one with `murmur emoji add`)");
    if (!mkReplyOnMurmur) throw new Error("no note to react to");
    // Misskey's reply to alice's note: a note of Misskey's that alice has not reacted to yet.
    await mu("POST", `/notes/${mkReplyOnMurmur.id}/reaction`, muToken, { emoji: `<:murmurcat:${muEmoji}>` });
    const mine = await mk<MkNote[]>("notes/timeline", { limit: 100 }, mkToken);
    const reply = mine.find((n) => n.text?.includes(mkReplyMarker));
    if (!reply) throw new Error("Misskey's reply not found on Misskey");
    const reactions = await until(async () => {
      const list = await mk<{ type: string }[]>("notes/reactions", { noteId: reply.id }, mkToken);
      return list.length ? list : undefined;
    });
    const types = reactions.map((r) => r.type);
    if (!types.some((t) => t.startsWith(":murmurcat@"))) throw new Error(`reactions ${JSON.stringify(types)}`);
    return JSON.stringify(types);
  });

  await check("renote Murmur -> Misskey (Announce)", async () => {
    if (!mkNote || !mkNoteOnMurmur) throw new Error("no note to renote");
    await mu("POST", `/notes/${mkNoteOnMurmur.id}/renote`, muToken, { content: "" });
    const noteId = mkNote.id;
    await until(async () => {
      const renotes = await mk<MkNote[]>("notes/renotes", { noteId, limit: 100 }, mkToken);
      return renotes.find((n) => !n.text);
    });
  });

  const muQuoteMarker = `quote from murmur ${run}`;
  await check("quote Murmur -> Misskey (quoteUrl, _misskey_quote)", async () => {
    if (!mkNote || !mkNoteOnMurmur) throw new Error("no note to quote");
    await mu("POST", `/notes/${mkNoteOnMurmur.id}/renote`, muToken, { content: muQuoteMarker });
    const noteId = mkNote.id;
    await until(async () => {
      const renotes = await mk<MkNote[]>("notes/renotes", { noteId, limit: 100 }, mkToken);
      return renotes.find((n) => n.text?.includes(muQuoteMarker) && n.renoteId === noteId);
    });
  });

  // Withdrawn reactions, content warnings and profile changes.
  await check("reaction withdrawn Misskey -> Murmur (Undo(Like))", async () => {
    if (!aliceNoteOnMisskey || !aliceNote) throw new Error("no reaction to withdraw");
    await mk("notes/reactions/delete", { noteId: aliceNoteOnMisskey.id }, mkToken);
    const id = aliceNote.id;
    await until(async () => (await mu<MuNote>("GET", `/notes/${id}`, muToken)).reactions?.length === 0);
  });

  await check("reaction withdrawn Murmur -> Misskey (Undo(Like))", async () => {
    if (!mkNote || !mkNoteOnMurmur) throw new Error("no reaction to withdraw");
    await mu("DELETE", `/notes/${mkNoteOnMurmur.id}/reaction`, muToken);
    const noteId = mkNote.id;
    await until(async () => (await mk<unknown[]>("notes/reactions", { noteId }, mkToken)).length === 0);
  });

  await check("content warning Murmur -> Misskey (summary)", async () => {
    const note = await mu<MuNote>("POST", "/notes", muToken, { content: `behind a cw ${run}`, cw_comment: "spoiler" });
    const copy = await until(() => misskeyCopy(mkToken, `${MURMUR}/notes/${note.id}`));
    if (copy.cw !== "spoiler") throw new Error(`cw ${JSON.stringify(copy.cw)}, text ${JSON.stringify(copy.text)}`);
  });

  const cwMarker = `misskey behind a cw ${run}`;
  await check("content warning Misskey -> Murmur (summary)", async () => {
    await mk("notes/create", { text: cwMarker, cw: "spoiler" }, mkToken);
    const copy = await until(() => murmurCopy(muToken, cwMarker));
    if (copy.cw_comment !== "spoiler") throw new Error(`cw_comment ${JSON.stringify(copy.cw_comment)}`);
  });

  await check("profile change Murmur -> Misskey (Update(Person))", async () => {
    if (!aliceOnMisskey) throw new Error("alice not resolved");
    await mu("PATCH", "/accounts/alice", muToken, { nickname: `Alice ${run}` });
    const userId = aliceOnMisskey.id;
    await until(
      async () => (await mk<{ name: string | null }>("users/show", { userId }, mkToken)).name === `Alice ${run}`,
    );
  });

  await check("profile change Misskey -> Murmur (Update(Person))", async () => {
    await mk("i/update", { name: `Misskey ${run}` }, mkToken);
    await until(
      async () =>
        (await mu<{ nickname: string }>("GET", `/accounts/@mk@${misskeyHost}`, muToken)).nickname === `Misskey ${run}`,
    );
  });

  // Deletions, both ways.
  await check("deletion Murmur -> Misskey (Delete)", async () => {
    if (!aliceNote || !aliceNoteOnMisskey) throw new Error("no note to delete");
    await mu("DELETE", `/notes/${aliceNote.id}`, muToken);
    const noteId = aliceNoteOnMisskey.id;
    await until(async () => {
      try {
        await mk("notes/show", { noteId }, mkToken);
        return false;
      } catch (error) {
        return error instanceof Error && error.message.includes("NO_SUCH_NOTE");
      }
    });
  });

  await check("deletion Misskey -> Murmur (Delete)", async () => {
    if (!mkNote || !mkNoteOnMurmur) throw new Error("no note to delete");
    await mk("notes/delete", { noteId: mkNote.id }, mkToken);
    const id = mkNoteOnMurmur.id;
    await until(async () => {
      try {
        await mu("GET", `/notes/${id}`, muToken);
        return false;
      } catch (error) {
        return (error as { status?: number }).status === 404;
      }
    });
  });

  await check("unfollow Murmur -> Misskey (Undo(Follow))", async () => {
    await mu("DELETE", `/accounts/@mk@${misskeyHost}/follow`, muToken);
    await until(async () => {
      const followers = await mk<{ followerId: string }[]>("users/followers", { userId: admin.id }, mkToken);
      return followers.length === 0;
    });
  });

  await check("unfollow Misskey -> Murmur (Undo(Follow))", async () => {
    if (!aliceOnMisskey) throw new Error("alice not resolved");
    await mk("following/delete", { userId: aliceOnMisskey.id }, mkToken);
    await until(
      async () => (await mu<{ followed_count: number }>("GET", "/accounts/alice", muToken)).followed_count === 0,
    );
  });

  const failed = results.filter((r) => !r.ok);
  console.log(`\n${results.length - failed.length} of ${results.length} checks passed`);
  process.exitCode = failed.length ? 1 : 0;
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 2;
});
