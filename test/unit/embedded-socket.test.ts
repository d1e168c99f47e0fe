// Where the embedded PostgreSQL's Unix socket goes (src/db/embedded-postgres.ts socketDirOf): its
// cluster's folder, unless the socket's name would be too long for one or the folder's name holds
// what PostgreSQL's list of folders reads otherwise; then TCP alone.
import { describe, expect, it } from "vitest";
import { socketDirOf } from "../../src/db/embedded-postgres.ts";

describe("socketDirOf", () => {
  it("puts the socket in the cluster's folder", () => {
    expect(socketDirOf("/var/lib/murmur/data/pg", 5432)).toBe("/var/lib/murmur/data/pg");
  });

  it("leaves it out where its name would pass 107 bytes", () => {
    const deep = `/${"d".repeat(89)}/pg`; // 93 bytes: "/.s.PGSQL.5432" makes 107, "/.s.PGSQL.54321" 108
    expect(socketDirOf(deep, 5432)).toBe(deep);
    expect(socketDirOf(deep, 54321)).toBeUndefined();
  });

  it("leaves it out of a folder whose name PostgreSQL would split or unquote", () => {
    for (const dir of ["/data/a,b/pg", '/data/"x"/pg', "/data/my data/pg"])
      expect(socketDirOf(dir, 5432)).toBeUndefined();
  });
});
