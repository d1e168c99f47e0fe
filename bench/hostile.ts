// Hostile-scale scenarios (docs/timelines.md#bounded-lists), each beside the same measure on
// ordinary data in the same run: a public note with 100,000 reactions newest on the global and home
// timelines, that note itself, an author with 100,000 followers posting at 50 notes/s while 32 of
// them read their home timelines, a phrase whose trigrams are all common but which no note has, and
// 32 connections reacting to one note at once. Run last: it adds accounts and notes.
import type { Seeded } from "../src/cli/seed.ts";
import type { Services } from "../src/domain/context.ts";
import { type Load, load, medianRun } from "./load.ts";
import { benchReactions } from "./react.ts";

export interface Figures {
  reqPerSec: number;
  p50: number;
  p99: number;
  bytesPerPage: number;
}

export interface Scenario {
  murmur: Figures;
  baseline: Figures;
}

const CROWD = 100_000;
/** Far above the seeded accounts' ids, far below any snowflake made now. */
const FIRST_CROWD = 3_000_000_000n;

async function measured(url: string, options: Parameters<typeof load>[1] = {}): Promise<Figures> {
  const page = await fetch(url, { headers: options.token ? { authorization: `Bearer ${options.token}` } : {} });
  const bytesPerPage = (await page.arrayBuffer()).byteLength;
  await load(url, { ...options, duration: 1 });
  const { reqPerSec, p50, p99 }: Load = await load(url, options);
  return { reqPerSec, p50, p99, bytesPerPage };
}

export async function benchHostile(
  services: Services,
  serverUrl: string,
  seeded: Seeded,
  viewerToken: string,
  /** The server's process, whose CPU time per reaction bench/react.ts reports. */
  serverPid: number,
): Promise<{ scenarios: Record<string, Scenario>; reactionsPerSecond: Figures & { refused: number } }> {
  const db = services.db;
  const url = (path: string) => `${serverUrl}${path}`;
  const scenarios: Record<string, Scenario> = {};

  // The crowd: 100,000 accounts, made by SQL.
  await db.$executeRaw`
    INSERT INTO accounts (id, name, name_key, email, email_key, nickname, passphrase_hash, verified)
    SELECT ${FIRST_CROWD}::bigint + g, 'crowd' || g, 'crowd' || g, 'crowd' || g || '@example.com',
      'crowd' || g || '@example.com', 'Crowd ' || g, '!', true
    FROM generate_series(1, ${CROWD}::int) g`;
  const crowdToken = async (k: number) => (await services.tokens.sign(FIRST_CROWD + BigInt(k), "access")).token;

  // Quiet baselines, before any hostile data.
  const ordinary = await db.note.findFirstOrThrow({ where: { visibility: "public" }, orderBy: { id: "desc" } });
  const quiet = {
    global: await measured(url("/timeline/global"), { token: viewerToken }),
    home: await measured(url("/timeline/home"), { token: viewerToken }),
    note: await measured(url(`/notes/${ordinary.id}`), { token: viewerToken }),
  };

  // A viral note by an account the viewer follows, newest on global and home: every account of
  // the crowd reacted to it once.
  const viral = services.ids.next();
  await db.note.create({
    data: { id: viral, authorId: seeded.busyAuthorId, content: "going viral", visibility: "public" },
  });
  await db.$executeRaw`
    INSERT INTO reactions (id, note_id, account_id, emoji)
    SELECT ${viral}::bigint + g, ${viral}::bigint, ${FIRST_CROWD}::bigint + g,
      (ARRAY['👍','🎉','❤️','😂'])[1 + g % 4]
    FROM generate_series(1, ${CROWD}::int) g`;
  await db.$executeRawUnsafe("VACUUM (ANALYZE) reactions, note_reaction_counts");
  scenarios["global timeline, a note with 100,000 reactions newest"] = {
    murmur: await measured(url("/timeline/global"), { token: viewerToken }),
    baseline: quiet.global,
  };
  scenarios["home timeline, a note with 100,000 reactions newest"] = {
    murmur: await measured(url("/timeline/home"), { token: viewerToken }),
    baseline: quiet.home,
  };
  scenarios["get the note with 100,000 reactions"] = {
    murmur: await measured(url(`/notes/${viral}`), { token: viewerToken }),
    baseline: quiet.note,
  };

  // An author the whole crowd follows, posting 50 notes/s while 32 followers read their homes.
  const star = FIRST_CROWD;
  await db.$executeRaw`
    INSERT INTO accounts (id, name, name_key, email, email_key, nickname, passphrase_hash, verified)
    VALUES (${star}, 'star', 'star', 'star@example.com', 'star@example.com', 'Star', '!', true)`;
  await db.$executeRaw`
    INSERT INTO follows (follower_id, followee_id)
    SELECT ${FIRST_CROWD}::bigint + g, ${star} FROM generate_series(1, ${CROWD}::int) g`;
  await db.$executeRaw`UPDATE accounts SET followers_count = ${CROWD} WHERE id = ${star}`;
  await db.$executeRaw`UPDATE accounts SET following_count = 1 WHERE id > ${star} AND id <= ${star + BigInt(CROWD)}`;
  const starToken = (await services.tokens.sign(star, "access")).token;
  for (let i = 0; i < 20; i++)
    await fetch(url("/notes"), {
      method: "POST",
      headers: { authorization: `Bearer ${starToken}`, "content-type": "application/json" },
      body: JSON.stringify({ content: `star note ${i}` }),
    });
  const followers = await Promise.all(Array.from({ length: 32 }, (_, i) => crowdToken(1 + i * 3000)));
  const quietHome = await measured(url("/timeline/home"), { tokens: followers, token: followers[0] });
  let posting = true;
  let posted = 0;
  const poster = (async () => {
    const started = performance.now();
    while (posting) {
      await fetch(url("/notes"), {
        method: "POST",
        headers: { authorization: `Bearer ${starToken}`, "content-type": "application/json" },
        body: JSON.stringify({ content: `star note while read ${posted}` }),
      });
      posted += 1;
      // 50 a second, on schedule.
      const due = started + posted * 20 - performance.now();
      if (due > 0) await new Promise((resolve) => setTimeout(resolve, due));
    }
  })();
  const busyHome = await measured(url("/timeline/home"), { tokens: followers, token: followers[0] });
  posting = false;
  await poster;
  scenarios["followers' home timelines while an author of 100,000 followers posts 50 notes/s"] = {
    murmur: busyHome,
    baseline: quietHome,
  };

  // A phrase whose trigrams every note has, in an order no note has.
  scenarios["search: common trigrams, no match (1M notes)"] = {
    murmur: await measured(url(`/search/notes?query=${encodeURIComponent('"note seeded"')}`), { token: viewerToken }),
    baseline: await measured(url("/search/notes?query=e4da3b"), { token: viewerToken }),
  };

  // 32 connections reacting to one note of the star's, each request another account of a crowd,
  // warmed and in three runs as `--only reactions` measures it (bench/react.ts): the median run.
  const runs = await benchReactions(services, serverUrl, star, serverPid);
  const reactionsPerSecond = {
    ...medianRun(runs),
    bytesPerPage: 0,
    refused: runs.reduce((sum, run) => sum + run.errors, 0),
  };
  return { scenarios, reactionsPerSecond };
}
