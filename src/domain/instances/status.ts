// The operator's view of the remote servers this one federates with (docs/federation.md#delivery):
// per host, what its deliveries came to (federation_hosts, written by src/federation/hosts.ts),
// what waits for it, and the moderators' policy for it.
//
// What waits is read as cheaply as it can be: the deliveries Fedify has queued for the host's
// inboxes (federation_messages of kind outbox), plus the federation outbox's rows whose named
// recipient is one of its accounts. A note's row goes to its author's followers, whose servers
// are known only once it is relayed (a moment later): until then it is counted for none.
import { Prisma, queryRows } from "../../db/client.ts";
import type { Services } from "../context.ts";
import { DomainError } from "../errors.ts";
import { type InstancePolicyKind, listInstancePolicies, normalizeHost, policyIn } from "./policies.ts";

export interface InstanceStatus {
  host: string;
  /** The moderators' decision that holds for it (its own, or its parent domain's). */
  policy: InstancePolicyKind | null;
  /** When its own policy was last set; null when it has none of its own (a parent domain's may hold). */
  updatedAt: Date | null;
  lastSuccessAt: Date | null;
  lastFailureAt: Date | null;
  /** POSTs that failed since the last that succeeded. */
  failures: number;
  /** Why the last failed POST failed (`HTTP 503`, a connection's error). */
  lastError: string | null;
  /** Deliveries waiting for it: queued, being retried, or held while it is paused. */
  queued: number;
}

export interface ListInstancesOptions {
  /** Hosts after this one (by name): the next page. */
  after?: string;
  /** At most this many (default and bound: INSTANCES_PAGE). */
  limit?: number;
}

export const INSTANCES_PAGE = 200;

/** The host part of an inbox URL in SQL, as URL.host has it (lower case, a port when it has one). */
const INBOX_HOST = Prisma.sql`lower(substring(message->>'inbox' from '^[a-zA-Z][a-zA-Z0-9+.-]*://([^/?#]+)'))`;

interface Row {
  host: string;
  last_success_at: Date | null;
  last_failure_at: Date | null;
  failures: number | null;
  last_error: string | null;
  queued: number;
}

/**
 * Every server this one has delivered to, has deliveries waiting for, or has a policy for, by
 * host name, a page at a time.
 */
export async function listInstances(
  services: Pick<Services, "db">,
  options: ListInstancesOptions = {},
): Promise<InstanceStatus[]> {
  const limit = Math.min(Math.max(1, Math.trunc(options.limit ?? INSTANCES_PAGE)), INSTANCES_PAGE);
  let after = "";
  if (options.after !== undefined) {
    const host = normalizeHost(options.after);
    if (!host) throw new DomainError("INVALID_REQUEST", { detail: `not a server's host: "${options.after}"` });
    after = host;
  }
  const [rows, policies] = await Promise.all([
    queryRows<Row>(
      services.db,
      Prisma.sql`
        WITH waiting AS (
          SELECT ${INBOX_HOST} AS host, count(*)::int AS n
          FROM federation_messages WHERE message->>'type' = 'outbox' GROUP BY 1
          UNION ALL
          SELECT a.host, count(*)::int FROM federation_outbox o JOIN accounts a ON a.id = o.recipient
          WHERE a.host IS NOT NULL GROUP BY 1
        ),
        queued AS (SELECT host, sum(n)::int AS queued FROM waiting WHERE host IS NOT NULL GROUP BY host),
        hosts AS (
          SELECT host FROM federation_hosts UNION SELECT host FROM queued UNION SELECT host FROM instance_policies
        )
        SELECT hosts.host, h.last_success_at, h.last_failure_at, h.failures, h.last_error,
               coalesce(q.queued, 0) AS queued
        FROM hosts
        LEFT JOIN federation_hosts h ON h.host = hosts.host
        LEFT JOIN queued q ON q.host = hosts.host
        WHERE hosts.host > ${after}
        ORDER BY hosts.host
        LIMIT ${limit}`,
    ),
    listInstancePolicies(services),
  ]);
  const table = new Map(policies.map((row) => [row.host, row.policy]));
  const updated = new Map(policies.map((row) => [row.host, row.updatedAt]));
  return rows.map((row) => ({
    host: row.host,
    policy: policyIn(table, row.host) ?? null,
    updatedAt: updated.get(row.host) ?? null,
    lastSuccessAt: row.last_success_at,
    lastFailureAt: row.last_failure_at,
    failures: row.failures ?? 0,
    lastError: row.last_error,
    queued: row.queued,
  }));
}
