// Moderators' decisions about remote servers (docs/federation.md#moderation): `block` refuses a
// server's activities and delivers nothing to it; `silence` lets its notes reach only those who
// follow its accounts; `allow` removes either. A decision about a name holds for its ports and its
// subdomains (blocking `example.com` blocks `a.example.com:8443`); the most specific one holds.
//
// Every instance of a fleet keeps the table in memory (it is a few rows: one per server a
// moderator decided about), and PostgreSQL keeps every copy true: a trigger NOTIFYs each change,
// whoever made it (prisma/migrations/*_instance_policies), and each instance LISTENs and reloads.
// While no connection listens, each question reads the table.
import type { Logger } from "pino";
import { type Db, Prisma, queryRows } from "../../db/client.ts";
import { Listener } from "../../db/listener.ts";
import type { InstancePolicyKind } from "../../generated/prisma/client.ts";
import type { Context, InstancePolicyTable, Services } from "../context.ts";
import { DomainError } from "../errors.ts";
import { requireModerator } from "../sessions/caller.ts";
import { endFollowsWith, isAddressHost } from "./block.ts";

export type { InstancePolicyKind };
/** What a moderator may decide about a server: a policy, or none (`allow`). */
export type InstancePolicyChoice = InstancePolicyKind | "allow";
export const INSTANCE_POLICY_CHOICES: readonly InstancePolicyChoice[] = ["block", "silence", "allow"];

export const INSTANCE_POLICIES_CHANNEL = "murmur_instance_policies";

export interface InstancePolicyRow {
  host: string;
  policy: InstancePolicyKind;
  moderatorId: bigint | null;
  updatedAt: Date;
}

/**
 * A server's host as policies name it: lower-cased, with its port when it has one that is not its
 * scheme's default. An operator may paste a URL (`https://example.com/@alice`): its host is taken.
 * Undefined when it names no host.
 */
export function normalizeHost(input: string): string | undefined {
  const text = input.trim().toLowerCase();
  if (!text || text.length > 253 + 6) return undefined;
  let url: URL;
  try {
    url = new URL(text.includes("://") ? text : `https://${text}`);
  } catch {
    return undefined;
  }
  if (!url.hostname || url.username || url.password) return undefined;
  if (!text.includes("://") && url.host !== text.replace(/:443$/, "")) return undefined;
  return url.host;
}

/** The names a policy for `host` may be written under, most specific first. */
function candidates(host: string): string[] {
  const found = [host];
  const hostname = host.replace(/:\d+$/, "");
  if (hostname !== host) found.push(hostname);
  // An address has no parents; a name has each of its parent domains (not the bare top level).
  if (isAddressHost(hostname)) return found;
  const labels = hostname.split(".");
  for (let i = 1; i < labels.length - 1; i++) found.push(labels.slice(i).join("."));
  return found;
}

/** The policy that holds for `host` in `table`, if any. */
export function policyIn(table: ReadonlyMap<string, InstancePolicyKind>, host: string): InstancePolicyKind | undefined {
  if (table.size === 0) return undefined;
  for (const name of candidates(host.toLowerCase())) {
    const policy = table.get(name);
    if (policy) return policy;
  }
  return undefined;
}

async function readTable(db: Db): Promise<Map<string, InstancePolicyKind>> {
  const rows = await queryRows<{ host: string; policy: InstancePolicyKind }>(
    db,
    Prisma.sql`SELECT host, policy FROM instance_policies`,
  );
  return new Map(rows.map((row) => [row.host, row.policy]));
}

/** This instance's copy of the policies, true while it listens for their changes. */
export class InstancePolicies implements InstancePolicyTable {
  private table?: Promise<Map<string, InstancePolicyKind>>;
  private listening = false;
  private readonly listener: Listener;

  constructor(
    databaseUrl: string,
    private readonly db: Db,
    log: Logger,
  ) {
    this.listener = new Listener(
      databaseUrl,
      [INSTANCE_POLICIES_CHANNEL],
      {
        notification: () => this.forget(),
        listening: () => {
          this.forget();
          this.listening = true;
        },
        lost: () => {
          this.listening = false;
          this.forget();
        },
      },
      log,
    );
  }

  /** The policy that holds for a server's host (`accounts.host`, a URL's host), if any. */
  async of(host: string): Promise<InstancePolicyKind | undefined> {
    return policyIn(await this.current(), host);
  }

  /** The whole table as this instance holds it. */
  current(): Promise<ReadonlyMap<string, InstancePolicyKind>> {
    if (!this.listening) return readTable(this.db);
    if (!this.table) {
      const table = readTable(this.db);
      this.table = table;
      // A failed read is not kept: the next question reads again.
      table.catch(() => {
        if (this.table === table) this.table = undefined;
      });
    }
    return this.table;
  }

  /** Reads the table again at the next question (a change heard, or made here). */
  forget(): void {
    this.table = undefined;
  }

  listen(): void {
    this.listener.listen();
  }

  async close(): Promise<void> {
    this.listening = false;
    this.forget();
    await this.listener.close();
  }
}

/**
 * Sets the policy for `hostInput` (`allow` removes it), as the operator (the CLI) or moderator
 * `moderatorId`. INVALID_REQUEST when it names no host, or this server's own.
 */
export async function setInstancePolicy(
  services: Services,
  hostInput: string,
  choice: string,
  moderatorId?: bigint,
): Promise<{ host: string; policy: InstancePolicyChoice }> {
  const host = normalizeHost(hostInput);
  if (!host) throw new DomainError("INVALID_REQUEST", { detail: `not a server's host: "${hostInput}"` });
  if (!isChoice(choice)) {
    throw new DomainError("INVALID_REQUEST", { detail: `a policy is one of ${INSTANCE_POLICY_CHOICES.join(", ")}` });
  }
  if (host === new URL(services.config.publicUrl).host) {
    throw new DomainError("INVALID_REQUEST", { detail: "this server's own host" });
  }
  await services.db.$transaction(async (tx) => {
    if (choice === "allow") {
      await tx.instancePolicy.deleteMany({ where: { host } });
      return;
    }
    const data = { policy: choice, moderatorId: moderatorId ?? null, updatedAt: new Date() };
    await tx.instancePolicy.upsert({ where: { host }, create: { host, ...data }, update: data });
    if (choice === "block") await endFollowsWith(tx, host);
  });
  services.instances.forget();
  return { host, policy: choice };
}

/** POST /admin/instances: a moderator or higher sets a server's policy. */
export function moderateInstance(
  ctx: Context,
  hostInput: string,
  choice: string,
): Promise<{ host: string; policy: InstancePolicyChoice }> {
  const moderator = requireModerator(ctx);
  return setInstancePolicy(ctx, hostInput, choice, moderator.id);
}

function isChoice(choice: string): choice is InstancePolicyChoice {
  return (INSTANCE_POLICY_CHOICES as readonly string[]).includes(choice);
}

/** Every server with a policy, by host. */
export function listInstancePolicies(services: Pick<Services, "db">): Promise<InstancePolicyRow[]> {
  return services.db.instancePolicy.findMany({ orderBy: { host: "asc" } });
}
