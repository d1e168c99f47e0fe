// A caller's account is read through node-postgres (readCallers, src/domain/sessions/caller-cache.ts):
// it must be the row Prisma's findUnique gives, column for column and type for type, whatever
// columns accounts has, for a local account and a remote one, and nothing for a deleted account.
import { afterAll, beforeAll, expect, it } from "vitest";
import { callerReader, readCallers } from "../src/domain/sessions/caller-cache.ts";
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
  const readCaller = callerReader((ids) => readCallers(db, ids));
  for (const id of [BigInt(local.id), remote.id]) {
    const read = await readCaller(id);
    expect(read).not.toBeNull();
    expect(read).toEqual(await db.account.findUnique({ where: { id } }));
    expect(typeof read?.id).toBe("bigint");
    expect(read?.createdAt).toBeInstanceOf(Date);
  }
  await db.account.update({ where: { id: remote.id }, data: { deletedAt: new Date() } });
  expect(await readCaller(remote.id)).toBeNull();
});

it("reads callers asked for together in fewer statements, each its own row in order", async () => {
  const { db } = server.services;
  const names = Array.from({ length: 12 }, (_, i) => `cr_crowd${i}`);
  const ids = await Promise.all(names.map(async (name) => BigInt((await account(server, name)).id)));
  const statements: number[] = [];
  const readCaller = callerReader((some) => {
    statements.push(some.length);
    return readCallers(db, some);
  });
  const read = await Promise.all([...ids, 1n, ...ids.slice(0, 2)].map((id) => readCaller(id)));
  expect(read.map((a) => a?.name ?? null)).toEqual([...names, null, ...names.slice(0, 2)]);
  // The first alone, at once; the 14 asked for while it ran, together.
  expect(statements).toEqual([1, 14]);
  expect(await readCallers(db, [ids[1], 2n, ids[0]])).toEqual([
    await db.account.findUnique({ where: { id: ids[1] } }),
    null,
    await db.account.findUnique({ where: { id: ids[0] } }),
  ]);
});
