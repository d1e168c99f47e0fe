// `seed --accounts N --notes M`: fills a database with synthetic data for benchmarks, by
// set-based SQL in batches (a progress bar shows them): accounts with skewed follows (a few with
// thousands of followers, and `viewer`, who follows 5,000), notes of every kind and visibility
// (renotes, quotes, replies, direct notes), reactions, attachments, lists, notifications.
// Every seeded account has the passphrase given (the CLI generates one when none is).
// It refuses a database holding accounts it did not make, unless forced: it is for benchmarks,
// and its accounts, all with one passphrase, have no place on a live instance.
import path from "node:path";
import { SingleBar } from "cli-progress";
import pg from "pg";
import sharp from "sharp";
import { snowflakeAt } from "../db/snowflake.ts";
import { hashPassphrase } from "../domain/accounts/passphrase.ts";
import { checkPassphrase } from "../domain/accounts/rules.ts";
import type { Services } from "../domain/context.ts";
import { storeDriveFile } from "../domain/drive/service.ts";

/** Seeded account ids start here, far below any snowflake made now. */
const FIRST_ACCOUNT = 1_000_000_000n;
/** Seeded account ids stay below this (seeded list and notification ids start at 10 and 20 times FIRST_ACCOUNT). */
const SEEDED_ACCOUNTS_END = FIRST_ACCOUNT * 2n;
const BATCH = 50_000;
const VIEWER_FOLLOWS = 5_000;

/** A word of the seeded vocabulary: six hex letters, each in about one note in a thousand. */
export const WORD_SQL = (n: string) => `substr(md5((${n})::text), 1, 6)`;

export interface SeedOptions {
  accounts: number;
  notes: number;
  /** Every seeded account's passphrase (the passphrase rules apply). */
  passphrase: string;
  /** Seeds a database holding accounts seed did not make (a live instance, a bench's own account). */
  force?: boolean;
  /** Prints a progress bar (the CLI); benchmarks stay quiet. */
  progress?: boolean;
  /** Called once the database is found fit to seed, before anything is written. */
  onStart?: () => void;
}

/** Seed will not run here: the database was seeded already, or holds accounts it did not make. */
export class SeedRefused extends Error {}

export interface Seeded {
  viewerId: bigint;
  listId: bigint;
  /** An account with many notes, for the account timeline. */
  busyAuthorId: bigint;
  first: bigint;
  last: bigint;
  images: bigint[];
}

const accountId = (k: number) => FIRST_ACCOUNT + BigInt(k);

async function seedImages(services: Services, owner: bigint): Promise<bigint[]> {
  const ids: bigint[] = [];
  const colors = [
    { r: 200, g: 80, b: 60 },
    { r: 40, g: 160, b: 220 },
    { r: 90, g: 200, b: 90 },
  ];
  for (const [i, background] of colors.entries()) {
    const file = path.join(services.storage.scratchDir, `seed-${Date.now()}-${i}.png`);
    const info = await sharp({ create: { width: 320, height: 240, channels: 3, background } })
      .png()
      .toFile(file);
    const stored = await storeDriveFile(services, {
      ownerId: owner,
      name: `seed-${i}.png`,
      nsfw: i === 2,
      localPath: file,
      size: info.size,
    });
    ids.push(stored.id);
  }
  return ids;
}

/** Accounts, follows, files, a list and notifications; then `notes` notes. Once per database. */
export async function seed(
  services: Services,
  databaseUrl: string,
  options: SeedOptions,
): Promise<Seeded & { notesPerSecond: number }> {
  const { accounts } = options;
  if (accounts < 2) throw new Error("seed needs at least 2 accounts");
  if (accounts >= Number(SEEDED_ACCOUNTS_END - FIRST_ACCOUNT)) throw new Error("seed makes fewer than 1e9 accounts");
  checkPassphrase(options.passphrase);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const bar = options.progress
    ? new SingleBar({ format: "seed [{bar}] {percentage}% | {value}/{total} rows | {stage}" })
    : undefined;
  let seeded: Seeded;
  try {
    if ((await client.query("SELECT 1 FROM accounts WHERE id = $1", [accountId(1)])).rowCount) {
      throw new SeedRefused("this database is seeded already");
    }
    if (!options.force) {
      const { rows } = await client.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM accounts WHERE id NOT BETWEEN $1 AND $2",
        [accountId(1), SEEDED_ACCOUNTS_END - 1n],
      );
      if (rows[0].n > 0) {
        throw new SeedRefused(
          `this database has ${rows[0].n} account${rows[0].n === 1 ? "" : "s"} seed did not make (a live instance?): --force to seed it all the same`,
        );
      }
    }
    options.onStart?.();
    bar?.start(accounts + options.notes, 0, { stage: "accounts" });
    const hash = await hashPassphrase(options.passphrase, services.config.bcryptCost);
    await client.query(
      `INSERT INTO accounts (id, name, name_key, email, email_key, nickname, passphrase_hash, verified)
       SELECT $1::bigint + g, CASE WHEN g = 1 THEN 'viewer' ELSE 'seed' || g END,
              CASE WHEN g = 1 THEN 'viewer' ELSE 'seed' || g END,
              'seed' || g || '@example.com', 'seed' || g || '@example.com', 'Seed ' || g, $2, true
       FROM generate_series(1, $3::int) g`,
      [FIRST_ACCOUNT, hash, accounts],
    );
    const first = accountId(1);
    const last = accountId(accounts);
    bar?.update(accounts, { stage: "follows" });
    // Skewed follows: each account follows about 20 others, picked with a cubic bias toward
    // the first accounts, which so gather thousands of followers; `viewer` follows 5,000.
    await client.query(
      `INSERT INTO follows (follower_id, followee_id)
       SELECT a, $1::bigint + floor(($2::bigint - $1::bigint + 1) * power(random(), 3))::bigint
       FROM generate_series($1::bigint, $2::bigint) a, generate_series(1, 20)
       ON CONFLICT DO NOTHING`,
      [first, last],
    );
    await client.query(
      `INSERT INTO follows (follower_id, followee_id)
       SELECT $1::bigint, $1::bigint + g FROM generate_series(1, least($2::int, $3::int - 1)) g
       ON CONFLICT DO NOTHING`,
      [first, VIEWER_FOLLOWS, accounts],
    );
    await client.query("DELETE FROM follows WHERE follower_id = followee_id");
    const images = await seedImages(services, accountId(2));
    const listId = FIRST_ACCOUNT * 10n;
    await client.query("INSERT INTO lists (id, owner_id, title, public) VALUES ($1, $2, 'seeded', true)", [
      listId,
      first,
    ]);
    await client.query(
      `INSERT INTO list_members (list_id, account_id)
       SELECT $1::bigint, $2::bigint + g FROM generate_series(1, least(30, $3::int - 1)) g`,
      [listId, first, accounts],
    );
    await client.query(
      `INSERT INTO notifications (id, recipient_id, type, actor_id, created_at)
       SELECT $1::bigint + g, $2::bigint, 'followed', $2::bigint + 1 + (g % ($3::int - 1)), now()
       FROM generate_series(1, 200) g`,
      [FIRST_ACCOUNT * 20n, first, accounts],
    );
    seeded = { viewerId: first, listId, busyAuthorId: accountId(2), first, last, images };
  } catch (err) {
    bar?.stop();
    throw err;
  } finally {
    await client.end();
  }
  const notesPerSecond = await addNotes(databaseUrl, seeded, options.notes, (done) =>
    bar?.update(accounts + done, { stage: "notes" }),
  ).finally(() => bar?.stop());
  return { ...seeded, notesPerSecond };
}

/**
 * Adds `count` notes by the seeded accounts, dated over the day before now: every kind and
 * visibility, with reactions and attachments. Returns notes per second.
 */
export async function addNotes(
  databaseUrl: string,
  seeded: Seeded,
  count: number,
  onProgress?: (done: number) => void,
): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  // Each run takes its own worker bits of the snowflake, so runs never share an id.
  const run = BigInt(1 + Math.floor(Math.random() * 1023)) << 12n;
  const base = snowflakeAt(Date.now() - 86_400_000 - count) | run;
  const started = performance.now();
  try {
    for (let done = 0; done < count; done += BATCH) {
      const from = done + 1;
      const to = Math.min(done + BATCH, count);
      // Recorded for the search index whenever one exists, as every write is (src/domain/search/outbox.ts).
      await client.query(
        `WITH added AS (
         INSERT INTO notes (id, author_id, content, cw_comment, visibility, send_to_id, renote_id, reply_to_id, created_at)
         SELECT $1::bigint + (g::bigint << 22),
                -- authors skewed too: a few write most
                $2::bigint + floor(($3::bigint - $2::bigint + 1) * power(random(), 2))::bigint,
                CASE WHEN g % 20 = 3 THEN '' ELSE 'seeded note ' || g || ' ' || ${WORD_SQL("g % 1000")} || ' '
                     || ${WORD_SQL("g % 997")} || ' ' || ${WORD_SQL("g % 991")}
                     || CASE WHEN g % 50 = 0 THEN ' https://example.com/' || g ELSE '' END END,
                CASE WHEN g % 40 = 0 THEN 'spoiler' ELSE '' END,
                (CASE WHEN g % 50 = 7 THEN 'direct' WHEN g % 10 = 1 THEN 'followers' WHEN g % 10 = 2 THEN 'home'
                      ELSE 'public' END)::"Visibility",
                CASE WHEN g % 50 = 7 THEN $2::bigint + (g % ($3::bigint - $2::bigint + 1)) END,
                -- every 20th note renotes (plainly: its content is empty), every 25th quotes
                CASE WHEN (g % 20 = 3 OR g % 25 = 4) AND g > 100 THEN $1::bigint + ((g - 1 - g % 97)::bigint << 22) END,
                CASE WHEN g % 20 = 9 AND g > 100 THEN $1::bigint + ((g - 1 - g % 89)::bigint << 22) END,
                now()
         FROM generate_series($4::int, $5::int) g
         RETURNING id)
         INSERT INTO search_outbox (op, target_id)
         SELECT 'upsert', id FROM added WHERE EXISTS (SELECT FROM search_index_state)`,
        [base, seeded.first, seeded.last, from, to],
      );
      await client.query(
        `INSERT INTO note_attachments (note_id, file_id, position)
         SELECT $1::bigint + (g::bigint << 22), ($2::bigint[])[1 + g % 3], 0
         FROM generate_series($3::int, $4::int) g WHERE g % 20 = 5`,
        [base, seeded.images, from, to],
      );
      await client.query(
        `INSERT INTO reactions (id, note_id, account_id, emoji)
         SELECT $1::bigint + (g::bigint << 22) + 1 + r, $1::bigint + (g::bigint << 22), $2::bigint + ((g * 7 + r) % ($3::bigint - $2::bigint + 1)),
                (ARRAY['👍','🎉','❤️','😂'])[1 + r]
         FROM generate_series($4::int, $5::int) g, generate_series(0, 2) r WHERE g % 10 = 0
         ON CONFLICT DO NOTHING`,
        [base, seeded.first, seeded.last, from, to],
      );
      onProgress?.(to);
    }
    const seconds = (performance.now() - started) / 1000;
    await client.query(
      `UPDATE accounts a SET
         followers_count = (SELECT count(*) FROM follows WHERE followee_id = a.id),
         following_count = (SELECT count(*) FROM follows WHERE follower_id = a.id),
         notes_count = (SELECT count(*) FROM notes WHERE author_id = a.id)
       WHERE a.id BETWEEN $1::bigint AND $2::bigint`,
      [seeded.first, seeded.last],
    );
    await client.query("ANALYZE");
    return Math.round(count / Math.max(seconds, 0.001));
  } finally {
    await client.end();
  }
}
