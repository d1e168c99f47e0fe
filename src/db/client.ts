// The Prisma client over node-postgres (Prisma 7's driver-adapter model).
import { PrismaPg } from "@prisma/adapter-pg";
import { PrismaClient } from "../generated/prisma/client.ts";

export type Db = PrismaClient;
export { Prisma } from "../generated/prisma/client.ts";

export function createDb(databaseUrl: string, poolSize = 20): Db {
  const adapter = new PrismaPg({
    connectionString: databaseUrl,
    max: poolSize,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
  });
  return new PrismaClient({ adapter });
}

/** True when the error is a unique-constraint violation; `fields` are the columns it names. */
export function uniqueViolation(err: unknown): { fields: string[] } | undefined {
  const e = err as { code?: string; meta?: Record<string, unknown> } | undefined;
  if (e?.code !== "P2002") return undefined;
  const meta = e.meta ?? {};
  const target = meta.target;
  const driver = meta.driverAdapterError as { cause?: { constraint?: { fields?: string[] } } } | undefined;
  const fields = Array.isArray(target)
    ? target.map(String)
    : typeof target === "string"
      ? [target]
      : (driver?.cause?.constraint?.fields ?? []);
  return { fields };
}
