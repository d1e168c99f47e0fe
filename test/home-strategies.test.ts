// The home timeline checks follows by a list of ids for accounts following few, and in SQL for
// accounts following many (src/domain/timelines/service.ts): both give the same notes.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { account, type TestAccount } from "./support/fixtures.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
let viewer: TestAccount;
beforeAll(async () => {
  server = await startTestServer();
  viewer = await account(server, "hs_viewer");
  const followed = await account(server, "hs_followed");
  const stranger = await account(server, "hs_stranger");
  await server.request("POST", "/accounts/hs_followed/follow", { token: viewer.token, body: {} });
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
});
afterAll(() => server.close());

const home = async () =>
  (await server.request("GET", "/timeline/home", { token: viewer.token })).body.map(
    (n: { content: string }) => n.content,
  );

describe("home timeline strategies", () => {
  it("give the same page whether the caller follows few accounts or many", async () => {
    const sparse = await home();
    expect(sparse).toEqual(["hs_followed home", "hs_followed followers", "hs_followed public", "hs_viewer public"]);
    // Past 200 followees the follows are checked in SQL: the counter decides, so raise it.
    await server.services.db.account.update({ where: { id: BigInt(viewer.id) }, data: { followingCount: 1000 } });
    expect(await home()).toEqual(sparse);
  });
});
