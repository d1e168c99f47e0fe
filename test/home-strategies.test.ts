// The home timeline checks follows by a list of ids for accounts following few, and in SQL for
// accounts following many (src/domain/timelines/service.ts): both give the same notes, and leave
// out the same ones (a frozen followee's, a muted followee's).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cast } from "./support/cast.ts";
import { account, type TestAccount, uploadFile } from "./support/fixtures.ts";
import { image } from "./support/media.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
let viewer: TestAccount;
let moderator: TestAccount;
beforeAll(async () => {
  server = await startTestServer();
  const names = { alice: "hs_followed", follower: "hs_viewer", stranger: "hs_stranger", moderator: "hs_moderator" };
  const { alice: followed, follower, stranger, moderator: mod } = await cast(server, names);
  [viewer, moderator] = [follower, mod];
  const frozen = await account(server, "hs_frozen");
  await server.request("POST", "/accounts/hs_frozen/follow", { token: moderator.token, body: {} });
  await server.request("POST", "/accounts/hs_frozen/follow", { token: viewer.token, body: {} });
  const muted = await account(server, "hs_muted");
  await server.request("POST", "/accounts/hs_muted/follow", { token: viewer.token, body: {} });
  await server.request("POST", "/notes", { token: muted.token, body: { content: "hs_muted public" } });
  expect((await server.request("POST", "/accounts/hs_muted/mute", { token: viewer.token, body: {} })).status).toBe(204);
  await server.request("POST", "/notes", { token: frozen.token, body: { content: "hs_frozen public" } });
  const froze = await server.request("PUT", "/accounts/hs_frozen/freeze", { token: moderator.token, body: {} });
  expect(froze.status).toBe(204);
  for (const nsfw of ["false", "true"]) {
    const file = await uploadFile(server, followed, await image("png", 8, 8), "x.png", { nsfw });
    await server.request("POST", "/notes", {
      token: followed.token,
      body: { content: `hs_followed file nsfw=${nsfw}`, attachment_file_ids: [file.id] },
    });
  }
  for (const [who, visibility] of [
    [viewer, "public"],
    [followed, "public"],
    [followed, "followers"],
    [followed, "home"],
    [followed, "direct"],
    [stranger, "public"],
  ] as const) {
    await server.request("POST", "/notes", {
      token: who.token,
      body: {
        content: `${who.name} ${visibility}`,
        visibility,
        ...(visibility === "direct" ? { send_to: "hs_viewer" } : {}),
      },
    });
  }
  // Reactions in order, a reply, a quote with a content warning: every field a page shows.
  const [newest, second] = (await server.request("GET", "/timeline/home", { token: viewer.token })).body;
  for (const [who, emoji] of [
    [viewer, "👍"],
    [followed, "🎉"],
  ] as const) {
    await server.request("POST", `/notes/${newest.id}/reaction`, { token: who.token, body: { emoji } });
  }
  await server.request("POST", `/notes/${second.id}/reply`, { token: followed.token, body: { content: "a reply" } });
  await server.request("POST", `/notes/${newest.id}/renote`, {
    token: viewer.token,
    body: { content: "a quote", cw_comment: "careful" },
  });
});
afterAll(() => server.close());

/** A whole home page as REST answers it: every field of every note, author, reactions, files. */
const homePage = async (query = "") =>
  (await server.request("GET", `/timeline/home${query}`, { token: viewer.token })).body;

const home = async (query = "") =>
  (await server.request("GET", `/timeline/home${query}`, { token: viewer.token })).body.map(
    (n: { id: string; content: string }) => `${n.content}`,
  );

/** Every page of the home timeline, two notes at a time through before_id. */
async function allPages(): Promise<string[]> {
  const first = await server.request("GET", "/timeline/home", { token: viewer.token });
  const ids: string[] = first.body.map((n: { id: string }) => n.id);
  const seen: string[] = [];
  for (let i = 0; i < ids.length; i += 2) {
    const page = await server.request("GET", `/timeline/home?before_id=${BigInt(ids[i]) + 1n}`, {
      token: viewer.token,
    });
    seen.push(page.body[0].content);
  }
  return seen;
}

describe("home timeline strategies", () => {
  it("give the same pages whether the caller follows few accounts or many", async () => {
    const sparseWhole = { all: await homePage(), files: await homePage("?has_attachment=true") };
    const sparse = {
      all: await home(),
      files: await home("?has_attachment=true"),
      safe: await home("?has_attachment=true&no_nsfw=true"),
      pages: await allPages(),
    };
    // The frozen followee's note is left out, the muted followee's, and the direct note to the caller.
    expect(sparse.all).toEqual([
      "a quote",
      "a reply",
      "hs_followed home",
      "hs_followed followers",
      "hs_followed public",
      "hs_viewer public",
      "hs_followed file nsfw=true",
      "hs_followed file nsfw=false",
    ]);
    expect(sparse.files).toEqual(["hs_followed file nsfw=true", "hs_followed file nsfw=false"]);
    expect(sparse.safe).toEqual(["hs_followed file nsfw=false"]);
    // Past 200 followees the follows are checked as the notes are walked: the counter decides.
    await server.services.db.account.update({ where: { id: BigInt(viewer.id) }, data: { followingCount: 1000 } });
    // The same answers, field for field, but the counter just set.
    // biome-ignore lint/suspicious/noExplicitAny: REST answers are read field by field
    const counted = (page: any[]) =>
      page.map((n) => (n.author.id === viewer.id ? { ...n, author: { ...n.author, following_count: 1000 } } : n));
    expect(await homePage()).toEqual(counted(sparseWhole.all));
    expect(await homePage("?has_attachment=true")).toEqual(counted(sparseWhole.files));
    expect(await home()).toEqual(sparse.all);
    expect(await home("?has_attachment=true")).toEqual(sparse.files);
    expect(await home("?has_attachment=true&no_nsfw=true")).toEqual(sparse.safe);
    expect(await allPages()).toEqual(sparse.pages);
    const last = await server.request("GET", "/timeline/home", { token: viewer.token });
    const oldest = last.body.at(-1).id;
    expect((await server.request("GET", `/timeline/home?before_id=${oldest}`, { token: viewer.token })).body).toEqual({
      error: "NOTHING_LEFT",
    });
  });

  it("show a moderator a frozen followee's notes either way", async () => {
    const contents = async () =>
      (await server.request("GET", "/timeline/home", { token: moderator.token })).body.map(
        (n: { content: string }) => n.content,
      );
    expect(await contents()).toEqual(["hs_frozen public"]);
    await server.services.db.account.update({ where: { id: BigInt(moderator.id) }, data: { followingCount: 1000 } });
    expect(await contents()).toEqual(["hs_frozen public"]);
  });
});
