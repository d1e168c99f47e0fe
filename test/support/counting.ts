// A second app on a test server's database whose Prisma client counts the SQL it sends: to
// prove a page costs a fixed number of queries whatever its size, or that two requests send
// the same statements (their texts, parameters apart).
import { PrismaPg } from "@prisma/adapter-pg";
import type { FastifyInstance } from "fastify";
import type { Db } from "../../src/db/client.ts";
import { PrismaClient } from "../../src/generated/prisma/client.ts";
import { buildServer } from "../../src/server.ts";
import type { AppServices } from "../../src/services.ts";
import type { TestServer } from "./server.ts";

export interface Counted {
  queries: number;
  status: number;
  /** The statements' texts, in the order sent. */
  statements: string[];
}

export interface CountingApp {
  app: FastifyInstance;
  /** Runs `request` and answers how many SQL statements it sent, which, and its status. */
  count(request: () => Promise<{ statusCode: number }>): Promise<Counted>;
  close(): Promise<void>;
}

/** `services` replaces some of the test server's (a mailer that records, say). */
export async function countingApp(server: TestServer, services: Partial<AppServices> = {}): Promise<CountingApp> {
  const db = new PrismaClient({
    adapter: new PrismaPg({ connectionString: server.databaseUrl }),
    log: [{ emit: "event", level: "query" }],
  });
  let statements: string[] = [];
  db.$on("query", (event) => {
    statements.push(event.query);
  });
  const app = await buildServer({ ...server.services, ...services, db: db as unknown as Db });
  return {
    app,
    async count(request) {
      statements = [];
      const answer = await request();
      return { queries: statements.length, status: answer.statusCode, statements };
    },
    async close() {
      await app.close();
      await db.$disconnect();
    },
  };
}
