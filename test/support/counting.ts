// A second app on a test server's database whose Prisma client counts the SQL it sends:
// to prove a page costs a fixed number of queries whatever its size.
import { PrismaPg } from "@prisma/adapter-pg";
import type { FastifyInstance } from "fastify";
import type { Db } from "../../src/db/client.ts";
import { PrismaClient } from "../../src/generated/prisma/client.ts";
import { buildServer } from "../../src/server.ts";
import type { TestServer } from "./server.ts";

export interface CountingApp {
  app: FastifyInstance;
  /** Runs `request` and answers how many SQL statements it sent, with its status. */
  count(request: () => Promise<{ statusCode: number }>): Promise<{ queries: number; status: number }>;
  close(): Promise<void>;
}

export async function countingApp(server: TestServer): Promise<CountingApp> {
  const db = new PrismaClient({
    adapter: new PrismaPg({ connectionString: server.databaseUrl }),
    log: [{ emit: "event", level: "query" }],
  });
  let queries = 0;
  db.$on("query", () => {
    queries += 1;
  });
  const app = await buildServer({ ...server.services, db: db as unknown as Db });
  return {
    app,
    async count(request) {
      queries = 0;
      const answer = await request();
      return { queries, status: answer.statusCode };
    },
    async close() {
      await app.close();
      await db.$disconnect();
    },
  };
}
