// A caller's account is read through node-postgres (readCaller, src/domain/sessions/caller-cache.ts):
// it must be the row Prisma's findUnique gives, column for column and type for type, whatever
// columns accounts has, for a local account and a remote one, and nothing for a deleted account.
import { afterAll, beforeAll, expect, it } from "vitest";
import { readCaller } from "../src/domain/sessions/caller-cache.ts";
import { account } from "./support/fixtures.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

it("gives the row Prisma's findUnique gives", async () => {
  const { db } = server.services;
  const local = await account(server, "cr_local");
  await db.account.update({
    where: { id: BigInt(local.id) },
    data: { tokensValidFrom: new Date(), bio: "a bio", locked: true },
  });
  const remote = await db.account.create({
    data: {
      id: 9_100_000_001n,
      name: "cr_remote",
      nameKey: "cr_remote@remote.example",
      email: "cr_remote@remote.example.invalid",
      emailKey: "cr_remote@remote.example.invalid",
      nickname: "Remote",
      passphraseHash: "",
      host: "remote.example",
      uri: "https://remote.example/users/cr_remote",
      inboxUrl: "https://remote.example/users/cr_remote/inbox",
      fetchedAt: new Date(),
    },
  });
  for (const id of [BigInt(local.id), remote.id]) {
    const read = await readCaller(db, id);
    expect(read).not.toBeNull();
    expect(read).toEqual(await db.account.findUnique({ where: { id } }));
    expect(typeof read?.id).toBe("bigint");
    expect(read?.createdAt).toBeInstanceOf(Date);
  }
  await db.account.update({ where: { id: remote.id }, data: { deletedAt: new Date() } });
  expect(await readCaller(db, remote.id)).toBeNull();
});
