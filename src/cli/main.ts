// The operator CLI: `npm run cli -- <command>`, also installed as the `murmur` bin.
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { Command, InvalidArgumentError } from "commander";
import { type Config, loadConfig } from "../config.ts";
import { startDatabase } from "../db/database.ts";
import { deleteAccountNow } from "../domain/accounts/deletion.ts";
import {
  createAccount,
  issuePassphraseReset,
  listAccounts,
  type ModerationAction,
  moderateAsOperator,
  OPERATOR_LIST_MAX,
  qualifiedNameOf,
  setRole,
  verifyAccount,
} from "../domain/accounts/service.ts";
import { createAnnouncement } from "../domain/announcements/service.ts";
import type { Services } from "../domain/context.ts";
import { addCustomEmoji } from "../domain/emoji/service.ts";
import { DomainError } from "../domain/errors.ts";
import { INSTANCE_POLICY_CHOICES, type InstancePolicyChoice, setInstancePolicy } from "../domain/instances/policies.ts";
import { listInstances } from "../domain/instances/status.ts";
import { findReports } from "../domain/reports/service.ts";
import { repairFollow } from "../federation/follow-repair.ts";
import { openFederation } from "../federation/mount.ts";
import { createLogger } from "../log.ts";
import { type AppServices, closeServices, createServices, createStorage } from "../services.ts";
import type { Storage } from "../storage/storage.ts";
import { backupDatabase } from "./backup.ts";
import { readPassphrase } from "./passphrase.ts";
import { reindexSearch } from "./reindex.ts";
import { inspectBackup, restoreDatabase } from "./restore.ts";
import { seed } from "./seed.ts";
import { migrateStorage } from "./storage-migrate.ts";
import { runFederationWorker } from "./worker.ts";

const ROLES = ["normal", "moderator", "admin"] as const;
const ANNOUNCEMENT_TYPES = ["info", "warn"] as const;

function oneOf<T extends string>(values: readonly T[]) {
  return (value: string): T => {
    if (!(values as readonly string[]).includes(value)) {
      throw new InvalidArgumentError(`expected one of ${values.join(", ")}`);
    }
    return value as T;
  };
}

/** A failed command's one line: what is wrong, in words (a domain error's code is for clients). */
function describeError(err: unknown): string {
  if (err instanceof DomainError) {
    if (err.detail) return err.detail;
    if (err.code === "VULNERABLE_PASSPHRASE") {
      return "a passphrase is 8 to 512 characters, without spaces or control characters";
    }
    return err.code.toLowerCase().replaceAll("_", " ");
  }
  if (err instanceof Error) {
    const { code, path: file } = err as NodeJS.ErrnoException;
    if (code === "ENOENT" && file) return `no such file: ${file}`;
    return err.message.split("\n").find((line) => line.trim()) ?? err.name;
  }
  return String(err);
}

/** The command's account, named in the error when there is none. */
function naming<T>(name: string, work: Promise<T>): Promise<T> {
  return work.catch((err) => {
    if (err instanceof DomainError && err.code === "ACCOUNT_NOT_FOUND") {
      throw new DomainError("ACCOUNT_NOT_FOUND", { detail: `no account "${name}"` });
    }
    throw err;
  });
}

/** Runs `task` with the services on the configured database, then releases them. */
async function withServices(task: (services: AppServices, databaseUrl: string) => Promise<void>): Promise<void> {
  const config = loadConfig();
  const log = createLogger(process.env.LOG_LEVEL ?? "warn");
  const database = await startDatabase(config, (message) => log.info(message));
  const services = await createServices(config, database.url, log);
  try {
    await task(services, database.url);
  } finally {
    await closeServices(services);
    await database.stop();
  }
}

/**
 * Runs `task` on the configured database as it is (no migrations applied: a backup changes
 * nothing, a restore migrates to its archive's point) and the file store, then releases them.
 */
async function withDatabase(
  task: (config: Config, databaseUrl: string, storage: Storage) => Promise<void>,
): Promise<void> {
  const config = loadConfig();
  const log = createLogger(process.env.LOG_LEVEL ?? "warn");
  const database = await startDatabase(config, (message) => log.info(message), { migrate: false });
  try {
    await task(config, database.url, await createStorage(config));
  } finally {
    await database.stop();
  }
}

/**
 * A file the operator named, from the folder the command was typed in: `npm run cli` runs it in
 * the installation's folder and names the operator's in INIT_CWD (the `murmur` command and
 * `npx murmur` keep it).
 */
function typedPath(file: string): string {
  const { npm_lifecycle_event: script, INIT_CWD: typedIn } = process.env;
  return path.resolve(script === "cli" && typedIn ? typedIn : process.cwd(), file);
}

const megabytes = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

/** The installation's version, from its package.json (wherever the command runs from). */
const VERSION = (
  JSON.parse(fs.readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }
).version;

const program = new Command()
  .name("murmur")
  .version(VERSION, "-V, --version", "print the installed version")
  .description("Murmur operator commands. They use DATABASE_URL, or the embedded PostgreSQL under DATA_DIR.")
  .showHelpAfterError();

program
  .command("role")
  .description("give an account a role")
  .argument("<account_name>", "plain or qualified account name, or account id")
  .argument("<role>", "normal, moderator or admin", oneOf(ROLES))
  .action((name: string, role: (typeof ROLES)[number]) =>
    withServices(async (services) => {
      const account = await naming(name, setRole(services, name, role));
      console.log(`${account.name} is now ${account.role}`);
    }),
  );

program
  .command("announce")
  .description("publish an announcement to every account")
  .requiredOption("--type <type>", "info or warn", oneOf(ANNOUNCEMENT_TYPES))
  .requiredOption("--title <title>", "title")
  .requiredOption("--description <description>", "text")
  .action((options: { type: (typeof ANNOUNCEMENT_TYPES)[number]; title: string; description: string }) =>
    withServices(async (services) => {
      const announcement = await createAnnouncement(services, options);
      console.log(
        `published ${announcement.type} announcement ${announcement.id}: ${JSON.stringify(announcement.title)}`,
      );
    }),
  );

const account = program.command("account").description("accounts");

/** How a command's one line names an account: `@alice@host (id 123)`. */
const named = (services: Services, a: { id: bigint; name: string; host?: string | null }) =>
  `${qualifiedNameOf(services, a)} (id ${a.id})`;

account
  .command("create")
  .description(
    "create an account, without captcha: the passphrase is asked on a terminal, or read from standard input " +
      "(its first line) when piped; never an argument",
  )
  .argument("<account_name>", "1 to 64 of A-Z a-z 0-9 - . _")
  .requiredOption("--email <email>", "its e-mail address")
  .option("--role <role>", "normal, moderator or admin", oneOf(ROLES), "normal")
  .option("--verified", "its e-mail counts as verified (otherwise the verification mail is queued, as at registration)")
  .action(async (name: string, options: { email: string; role: (typeof ROLES)[number]; verified?: boolean }) => {
    const passphrase = await readPassphrase();
    await withServices(async (services) => {
      const verified = options.verified ?? false;
      const created = await createAccount(services, {
        name,
        email: options.email,
        passphrase,
        role: options.role,
        verified,
      });
      const state = verified ? "verified" : `not verified: the verification mail is queued to ${created.email}`;
      console.log(`created ${created.role} ${named(services, created)}, ${state}`);
    });
  });

account
  .command("verify")
  .description("mark an account's e-mail as verified, as its verification token would")
  .argument("<account_name>", "plain or qualified account name, or account id")
  .action((name: string) =>
    withServices(async (services) => {
      const verified = await naming(name, verifyAccount(services, name)).catch((err) => {
        if (err instanceof DomainError && err.code === "ACCOUNT_ALREADY_VERIFIED") {
          throw new DomainError(err.code, { detail: `${name} is verified already` });
        }
        throw err;
      });
      console.log(`verified ${named(services, verified)}`);
    }),
  );

account
  .command("reset-passphrase")
  .description(
    "print a passphrase reset token (instead of mailing it): POST /accounts/{name}/passphrase " +
      '{"token", "passphrase"} sets a new passphrase with it, once, within the hour, and ends every session',
  )
  .argument("<account_name>", "plain or qualified account name, or account id")
  .action((name: string) =>
    withServices(async (services) => {
      const reset = await naming(name, issuePassphraseReset(services, name));
      console.log(
        `reset token for ${named(services, reset.account)}, usable once until ${reset.expiresAt.toISOString()}: ${reset.token}`,
      );
    }),
  );

/** What each moderation command says: done, or that there was nothing to do. */
const MODERATION: Record<ModerationAction, { description: string; done: string; unchanged: string }> = {
  freeze: {
    description: "freeze an account (any role): its tokens answer 403 YOU_ARE_FROZEN, its notes are hidden",
    done: "froze",
    unchanged: "", // ALREADY_FROZEN
  },
  unfreeze: { description: "unfreeze an account", done: "unfroze", unchanged: "is not frozen:" },
  silence: {
    description: "silence an account (any role): it can no longer post public notes",
    done: "silenced",
    unchanged: "is silenced already:",
  },
  unsilence: { description: "unsilence an account", done: "unsilenced", unchanged: "is not silenced:" },
};

for (const [action, words] of Object.entries(MODERATION) as [
  ModerationAction,
  (typeof MODERATION)[ModerationAction],
][]) {
  account
    .command(action)
    .description(words.description)
    .argument("<account_name>", "plain or qualified account name, or account id")
    .action((name: string) =>
      withServices(async (services) => {
        const result = await naming(name, moderateAsOperator(services, name, action)).catch((err) => {
          if (err instanceof DomainError && err.code === "ALREADY_FROZEN") {
            throw new DomainError(err.code, { detail: `${name} is frozen already` });
          }
          throw err;
        });
        console.log(
          result.changed
            ? `${words.done} ${named(services, result.account)}`
            : `${named(services, result.account)} ${words.unchanged} nothing done`,
        );
      }),
    );
}

account
  .command("delete")
  .description("delete an account and everything of it (any role); its name stays reserved. Waits until done")
  .argument("<account_name>", "plain or qualified account name, or account id")
  .action((name: string) =>
    withServices(async (services) => {
      const id = await naming(name, deleteAccountNow(services, name));
      console.log(`deleted ${name} (${id})`);
    }),
  );

account
  .command("list")
  .description("accounts, oldest first: name, id, role, created, notes")
  .option(
    "--limit <n>",
    `accounts to print, at most ${OPERATOR_LIST_MAX}`,
    (v: string) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 1 || n > OPERATOR_LIST_MAX) {
        throw new InvalidArgumentError(`expected a whole number from 1 to ${OPERATOR_LIST_MAX}`);
      }
      return n;
    },
    100,
  )
  .option("--after <id>", "only accounts after this id (the last one printed: the next page)", (v: string) => {
    if (!/^[0-9]{1,20}$/.test(v)) throw new InvalidArgumentError("expected an account id");
    return BigInt(v);
  })
  .action((options: { limit: number; after?: bigint }) =>
    withServices(async (services) => {
      const rows = await listAccounts(services, { limit: options.limit, afterId: options.after });
      console.log(["name", "id", "role", "created", "notes"].join("\t"));
      for (const a of rows) {
        console.log([a.name, a.id, a.role, a.createdAt.toISOString(), a.notesCount].join("\t"));
      }
      if (rows.length === options.limit) {
        console.error(`more: --after ${rows[rows.length - 1].id}`);
      }
    }),
  );

const emoji = program.command("emoji").description("custom emoji, used in reactions as <:alias:id>");

emoji
  .command("add")
  .description("add a custom emoji from an image file; prints its id")
  .argument("<alias>", "2 to 64 letters, digits or _")
  .argument("<image_file>", "PNG, APNG, GIF, JPEG, WebP or AVIF")
  .action((alias: string, imageFile: string) =>
    withServices(async (services) => {
      const created = await addCustomEmoji(services, alias, typedPath(imageFile));
      console.log(created.id.toString());
    }),
  );

program
  .command("search")
  .description("the search index")
  .command("reindex")
  .description("rebuild the Meilisearch index from PostgreSQL, with a progress bar; searches go on meanwhile")
  .action(() => withServices(reindexSearch));

program
  .command("storage")
  .description("where uploaded files are kept")
  .command("migrate")
  .description("copy every file of STORAGE_DIR into S3_BUCKET, with a progress bar; resumable (run it again)")
  .action(() =>
    withServices(async (services) => {
      const report = await migrateStorage(services);
      console.log(`copied ${report.copied} objects, ${report.skipped} already in the bucket`);
      if (report.missing.length)
        console.log(`${report.missing.length} missing from STORAGE_DIR: ${report.missing.slice(0, 20).join(", ")}`);
    }),
  );

program
  .command("reports")
  .description("list open reports, newest first: id, date, reporter, reported account, notes named, comment")
  .option("--resolved", "list resolved reports instead")
  .action((options: { resolved?: boolean }) =>
    withServices(async (services) => {
      let beforeId: string | undefined;
      for (;;) {
        const page = await findReports(services, { resolved: options.resolved ?? false, beforeId });
        for (const r of page) {
          const notes = r.noteIds.length ? ` notes ${r.noteIds.join(",")}` : "";
          console.log(
            `${r.id}\t${r.createdAt.toISOString()}\t${r.reporter?.name ?? r.reporterHost} -> ${r.account.name}${notes}\t${JSON.stringify(r.comment)}`,
          );
        }
        if (!page.length) break;
        beforeId = page[page.length - 1].id.toString();
      }
    }),
  );

const instance = program
  .command("instance")
  .description("remote servers: block, silence or allow one (every instance of a fleet at once); list them");
for (const choice of INSTANCE_POLICY_CHOICES) {
  instance
    .command(choice)
    .description(
      {
        block: "refuse its activities, deliver nothing to it, end its accounts' follows",
        silence: "its notes reach only those who follow its accounts",
        allow: "remove a block or a silence",
      }[choice],
    )
    .argument("<host>", "the server's host (example.com, or with its port); its subdomains too")
    .action((host: string) =>
      withServices(async (services) => {
        const set = await setInstancePolicy(services, host, choice as InstancePolicyChoice);
        console.log(`${set.host}\t${set.policy}`);
      }),
    );
}
instance
  .command("list")
  .description(
    "servers delivered to or with a policy: host, policy, last success, last failure, failures since the last " +
      "success, deliveries queued, last error ('-' for none)",
  )
  .action(() =>
    withServices(async (services) => {
      const when = (at: Date | null) => at?.toISOString() ?? "-";
      let after: string | undefined;
      for (;;) {
        const page = await listInstances(services, { after });
        for (const row of page) {
          console.log(
            [
              row.host,
              row.policy ?? "-",
              when(row.lastSuccessAt),
              when(row.lastFailureAt),
              row.failures,
              row.queued,
              row.lastError ?? "-",
            ].join("\t"),
          );
        }
        if (page.length === 0) break;
        after = page[page.length - 1].host;
      }
    }),
  );

program
  .command("follow")
  .description("a local account's follows of remote accounts")
  .command("repair")
  .description(
    "send Undo(Follow) and then a new Follow for a request whose Accept never came, or a follow the remote server " +
      "forgot (delivered by whichever process works the federation queue)",
  )
  .argument("<local-name>", "the local account that follows")
  .argument("<remote>", "the remote account it follows, @name@host")
  .action((localName: string, remote: string) =>
    withServices(async (services) => {
      if (!services.config.federation) throw new Error("FEDERATION=false: there is no federation to repair");
      // Only to write the outbox: the activities are built and sent by a process working the queue.
      const { close } = openFederation(services, false);
      try {
        const repaired = await repairFollow(services, localName, remote);
        console.log(`${repaired.pending ? "request" : "follow"}\t${repaired.activityId}`);
      } finally {
        await close();
      }
    }),
  );

program
  .command("backup")
  .description(
    "write the whole database (and the local store's files; S3 objects are named, they stay in the bucket) to a " +
      "gzipped tar, from one consistent snapshot, while the server runs, with a progress bar",
  )
  .argument("<file>", "the archive to write (e.g. murmur-2026-11-25.tar.gz)")
  .action((typed: string) =>
    withDatabase(async (config, databaseUrl, storage) => {
      const file = typedPath(typed);
      const isTty = process.stderr.isTTY === true;
      const report = await backupDatabase({
        config,
        databaseUrl,
        storage,
        file,
        murmurVersion: VERSION,
        progress: isTty,
      });
      const { manifest } = report;
      const rows = manifest.tables.reduce((sum, t) => sum + t.rows, 0);
      const files =
        manifest.files.store === "s3"
          ? `${manifest.files.objects} files named (they stay in bucket ${manifest.files.bucket})`
          : `${report.filesCopied} files`;
      console.log(
        `backed up ${rows} rows of ${manifest.tables.length} tables and ${files} to ${file} (${megabytes(report.bytes)})`,
      );
      if (report.missing.length) {
        console.log(
          `${report.missing.length} files were deleted while it ran; they restore without bytes: ${report.missing.slice(0, 20).join(", ")}`,
        );
      }
    }),
  );

program
  .command("restore")
  .description(
    "load an archive of `backup` into an empty database (a fresh DATA_DIR, or a new database for DATABASE_URL) in " +
      "one transaction, with its files, then apply newer migrations; with a progress bar",
  )
  .argument("<file>", "an archive written by `murmur backup`")
  .option("--force", "replace whatever the database holds (stop the servers on it first)")
  .action(async (typed: string, options: { force?: boolean }) => {
    const file = typedPath(typed);
    await inspectBackup(file);
    await withDatabase(async (config, databaseUrl, storage) => {
      const isTty = process.stderr.isTTY === true;
      const report = await restoreDatabase({ databaseUrl, storage, file, force: options.force, progress: isTty });
      const { manifest } = report;
      const files =
        manifest.files.store === "s3"
          ? `${manifest.files.objects} files named; they stay in bucket ${manifest.files.bucket}`
          : `${report.filesWritten} files`;
      console.log(
        `restored ${report.rows} rows of ${manifest.tables.length} tables and ${files} from ${file} (made ${manifest.createdAt})`,
      );
      if (manifest.files.store === "s3" && config.s3?.bucket !== manifest.files.bucket) {
        console.log(`set S3_BUCKET=${manifest.files.bucket} (and its credentials) for the files to be served`);
      }
      if (report.missing.length)
        console.log(`${report.missing.length} files were not in the backup: ${report.missing.slice(0, 20).join(", ")}`);
      if (report.migrated.length) console.log(`applied newer migrations: ${report.migrated.join(", ")}`);
    });
  });

const count = (value: string): number => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError("expected a whole number, 1 or more");
  return n;
};

program
  .command("seed")
  .description("fill the database with synthetic data for benchmarks; refuses a database with accounts it did not make")
  .requiredOption("--accounts <n>", "accounts (the first is `viewer`, following up to 5,000)", count)
  .requiredOption("--notes <m>", "notes", count)
  .option("--passphrase <passphrase>", "every seeded account's passphrase (default: a random one, printed once)")
  .option("--force", "seed a database that has accounts seed did not make")
  .action((options: { accounts: number; notes: number; passphrase?: string; force?: boolean }) =>
    withServices(async (services, databaseUrl) => {
      const passphrase = options.passphrase ?? randomBytes(15).toString("base64url");
      const result = await seed(services, databaseUrl, {
        ...options,
        passphrase,
        progress: true,
        onStart: () => {
          if (!options.passphrase) console.log(`passphrase of every seeded account: ${passphrase}`);
        },
      });
      console.log(`seeded ${options.accounts} accounts and ${options.notes} notes (${result.notesPerSecond} notes/s)`);
    }),
  );

program
  .command("worker")
  .description("deliver federation's queue and handle what other servers sent, until SIGTERM (docs/running.md)")
  .action(() => withServices((services) => runFederationWorker(services)));

program.parseAsync().catch((err) => {
  console.error(`error: ${describeError(err)}`);
  if (process.env.LOG_LEVEL === "debug" && err instanceof Error) console.error(err.stack);
  process.exit(1);
});
