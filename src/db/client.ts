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

/**
 * A unique-constraint violation, or undefined for any other error. `columns` names what was
 * violated: the columns where Prisma reports them, else the index name (Prisma 7 with the pg
 * adapter reports only that, e.g. `accounts_email_key_key`).
 */
export function uniqueViolation(err: unknown): { columns: string[] } | undefined {
  const e = err as { code?: string; meta?: Record<string, unknown> } | undefined;
  if (e?.code !== "P2002") return undefined;
  const meta = e.meta ?? {};
  const constraint = (meta.driverAdapterError as { cause?: { constraint?: { fields?: string[]; index?: string } } })
    ?.cause?.constraint;
  const target = meta.target;
  const columns = [
    ...(Array.isArray(target) ? target.map(String) : typeof target === "string" ? [target] : []),
    ...(constraint?.fields ?? []),
    ...(constraint?.index ? [constraint.index] : []),
  ];
  return { columns };
}
