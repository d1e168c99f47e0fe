// A transaction held open on purpose: `write` runs in it, then it waits, uncommitted, until
// `commit` is called (what a slow request does while something else runs meanwhile).
import type { Db, Prisma } from "../../src/db/client.ts";

export interface HeldTransaction {
  /** Lets the transaction commit, and waits until it has. */
  commit(): Promise<void>;
}

export async function holdOpen(
  db: Db,
  write: (tx: Prisma.TransactionClient) => Promise<unknown>,
): Promise<HeldTransaction> {
  let entered!: () => void;
  let release!: () => void;
  const inside = new Promise<void>((resolve) => {
    entered = resolve;
  });
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const done = db.$transaction(
    async (tx) => {
      await write(tx);
      entered();
      await held;
    },
    { timeout: 60_000 },
  );
  await Promise.race([inside, done]);
  return {
    async commit() {
      release();
      await done;
    },
  };
}
