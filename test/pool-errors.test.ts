// A connection the server ends while it is handed out and idle (its PostgreSQL stopped, an
// administrator's pg_terminate_backend) is an 'error' of its client, which node-postgres's pool
// no longer hears once it has handed the client out: unheard, that error ended the process (src/db/pool.ts).
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newPool } from "../src/db/pool.ts";
import { freshDatabase } from "./support/server.ts";

let url: string;
let admin: pg.Client;
beforeAll(async () => {
  url = await freshDatabase();
  admin = new pg.Client({ connectionString: url });
  await admin.connect();
});
afterAll(async () => {
  await admin.end();
});

describe("a pool's connection ended by the server", () => {
  it("while handed out and idle, fails its next query instead of ending the process", async () => {
    const pool = newPool({ connectionString: url, max: 2 });
    try {
      const client = await pool.connect();
      const { rows } = await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
      await admin.query("SELECT pg_terminate_backend($1)", [rows[0].pid]);
      // The server's FATAL comes while no query of the client runs.
      await new Promise((resolve) => setTimeout(resolve, 300));
      await expect(client.query("SELECT 1")).rejects.toThrow();
      client.release(true);
      // The pool goes on with a new connection.
      expect((await pool.query<{ one: number }>("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);
    } finally {
      await pool.end();
    }
  });
});
