// Avatar and header (extension, docs/accounts.md#update): the owner's image files, shown as URLs in
// the public view, "" when unset, and unset when the file is deleted.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError } from "./support/expect.ts";
import { account, type TestAccount, uploadFile } from "./support/fixtures.ts";
import { image, wav } from "./support/media.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
let alice: TestAccount;
let bob: TestAccount;
beforeAll(async () => {
  server = await startTestServer();
  alice = await account(server, "av_alice");
  bob = await account(server, "av_bob");
});
afterAll(() => server.close());

const uploadAs = async (who: TestAccount, bytes: Buffer, name: string) =>
  (await uploadFile(server, who, bytes, name)).id;

const patch = (who: TestAccount, body: object) =>
  server.request("PATCH", `/accounts/${who.name}`, { token: who.token, body });

describe("avatar and header", () => {
  it("sets, shows and unsets the owner's images", async () => {
    const avatar = await uploadAs(alice, await image("png", 64, 64), "me.png");
    const header = await uploadAs(alice, await image("jpeg", 300, 100), "banner.jpg");
    expect((await patch(alice, { avatar_file_id: avatar, header_file_id: header })).status).toBe(200);
    const view = await server.request("GET", "/accounts/av_alice");
    expect(view.body.avatar).toBe(`http://murmur.test/files/${avatar}`);
    expect(view.body.header).toBe(`http://murmur.test/files/${header}`);

    expect((await patch(alice, { header_file_id: "" })).status).toBe(200);
    expect((await server.request("GET", "/accounts/av_alice")).body.header).toBe("");
  });

  it("refuses another account's file, an unknown one, and a file that is not an image", async () => {
    const bobs = await uploadAs(bob, await image("png", 10, 10), "b.png");
    expectError(await patch(alice, { avatar_file_id: bobs }), 404, "FILE_NOT_FOUND");
    expectError(await patch(alice, { avatar_file_id: "123" }), 404, "FILE_NOT_FOUND");
    expectError(await patch(alice, { avatar_file_id: "abc" }), 404, "FILE_NOT_FOUND");
    const sound = await uploadAs(alice, wav(), "a.wav");
    expectError(await patch(alice, { avatar_file_id: sound }), 400, "UNSUPPORTED_FILE_TYPE");
    expectError(await patch(alice, { avatar_file_id: 5 }), 400, "INVALID_REQUEST");
  });

  it("unsets the avatar when its file is deleted", async () => {
    const avatar = await uploadAs(bob, await image("webp", 32, 32), "face.webp");
    await patch(bob, { avatar_file_id: avatar });
    expect((await server.request("GET", "/accounts/av_bob")).body.avatar).not.toBe("");
    expect((await server.request("DELETE", `/drive/${avatar}`, { token: bob.token })).status).toBe(204);
    expect((await server.request("GET", "/accounts/av_bob")).body.avatar).toBe("");
  });
});
