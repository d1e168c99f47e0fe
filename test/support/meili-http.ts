// An HTTP server answering the requests Murmur's write side sends to Meilisearch (version,
// indexes, settings, documents added, updated and deleted, swaps, tasks), as Meilisearch 1.18
// answers them: the documents are kept as sent, per index, and a swap exchanges two indexes'
// documents. It never searches: it is there to answer, to record what was asked, and to fail as
// Meilisearch fails (`{message, code, type, link}` with the status it uses,
// crates/meilisearch-types/src/error.rs), either at once or as a task that failed.
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface MeiliError {
  status: number;
  code: string;
  type: "invalid_request" | "internal" | "auth" | "system";
  message: string;
}

/** Meilisearch's errors, as its error.rs states their type and status. */
export const ERRORS = {
  invalidApiKey: { status: 403, code: "invalid_api_key", type: "auth", message: "The provided API key is invalid." },
  missingAuthorizationHeader: {
    status: 401,
    code: "missing_authorization_header",
    type: "auth",
    message: "The Authorization header is missing. It must use the bearer authorization method.",
  },
  internal: { status: 500, code: "internal", type: "internal", message: "An internal error has occurred." },
  noSpace: {
    status: 422,
    code: "no_space_left_on_device",
    type: "system",
    message: "No space left on device (os error 28)",
  },
  databaseSize: {
    status: 500,
    code: "database_size_limit_reached",
    type: "internal",
    message: "Maximum database size has been reached.",
  },
  ioError: { status: 422, code: "io_error", type: "system", message: "Input/output error (os error 5)" },
  invalidDocumentId: {
    status: 400,
    code: "invalid_document_id",
    type: "invalid_request",
    message:
      'Document identifier `"x y"` is invalid. A document identifier can be of type integer or string, only composed of alphanumeric characters (a-z A-Z 0-9), hyphens (-) and underscores (_), and can not be more than 511 bytes.',
  },
} satisfies Record<string, MeiliError>;

export interface Request {
  method: string;
  path: string;
  body: unknown;
}

/** What a request is answered with instead of its success: an error now, or a task that fails. */
export type Failure = { now: MeiliError } | { task: MeiliError } | undefined;

export interface Op {
  index: string;
  kind: "add" | "update" | "delete" | "swap" | "create" | "drop";
  ids: string[];
}

type Doc = Record<string, unknown> & { id: string };

export interface MeiliServer {
  url: string;
  /** Every request, in order. */
  requests: Request[];
  /** Every task that succeeded, in the order Meilisearch would have processed it. */
  ops: Op[];
  indexes: Map<string, Map<string, Doc>>;
  /** Decides each request's failure (none by default). */
  fail: (request: Request) => Failure;
  /** Awaited before a task is enqueued: what the test does while Meilisearch receives the request. */
  before: (request: Request) => Promise<void> | void;
  /** The ids an index holds, but the marker. */
  ids(index: string): string[];
  close(): Promise<void>;
}

const body = (error: MeiliError) => ({
  message: error.message,
  code: error.code,
  type: error.type,
  link: `https://docs.meilisearch.com/errors#${error.code}`,
});

export async function startMeiliServer(): Promise<MeiliServer> {
  const indexes = new Map<string, Map<string, Doc>>();
  const tasks = new Map<number, Record<string, unknown>>();
  let nextTask = 0;
  const server: MeiliServer = {
    url: "",
    requests: [],
    ops: [],
    indexes,
    fail: () => undefined,
    before: () => {},
    ids: (index) => [...(indexes.get(index)?.keys() ?? [])].filter((id) => id !== "generation").sort(),
    close: () => new Promise((resolve) => door.close(() => resolve())),
  };

  /** Runs `apply` as a task: enqueued now, finished at once (failed when told). */
  const task = (
    indexUid: string | null,
    type: string,
    failure: Failure,
    // biome-ignore lint/suspicious/noConfusingVoidType: an apply that succeeds returns nothing
    apply: () => MeiliError | undefined | void,
  ) => {
    const uid = nextTask++;
    const error = failure && "task" in failure ? failure.task : (apply() ?? undefined);
    const at = new Date().toISOString();
    tasks.set(uid, {
      uid,
      batchUid: uid,
      indexUid,
      status: error ? "failed" : "succeeded",
      type,
      canceledBy: null,
      details: {},
      error: error ? body(error) : null,
      duration: "PT0S",
      enqueuedAt: at,
      startedAt: at,
      finishedAt: at,
    });
    return { status: 202, json: { taskUid: uid, indexUid, status: "enqueued", type, enqueuedAt: at } };
  };
  const notFound = (uid: string): MeiliError => ({
    status: 404,
    code: "index_not_found",
    type: "invalid_request",
    message: `Index \`${uid}\` not found.`,
  });

  const answer = async (request: Request): Promise<{ status: number; json?: unknown }> => {
    const failure = server.fail(request);
    if (failure && "now" in failure) return { status: failure.now.status, json: body(failure.now) };
    const { method, path } = request;
    const parts = path.split("/").filter(Boolean);
    if (method === "GET" && path === "/version")
      return { status: 200, json: { pkgVersion: "1.18.0", commitSha: "x", commitDate: "2025-01-01" } };
    if (method === "GET" && parts[0] === "tasks") {
      const found = tasks.get(Number(parts[1]));
      if (!found)
        return {
          status: 404,
          json: body({ status: 404, code: "task_not_found", type: "invalid_request", message: "Task not found." }),
        };
      return { status: 200, json: found };
    }
    await server.before(request);
    if (method === "POST" && path === "/indexes") {
      const { uid } = request.body as { uid: string };
      return task(uid, "indexCreation", failure, () => {
        if (indexes.has(uid))
          return { status: 409, code: "index_already_exists", type: "invalid_request", message: "exists" };
        indexes.set(uid, new Map());
        server.ops.push({ index: uid, kind: "create", ids: [] });
      });
    }
    if (method === "POST" && path === "/swap-indexes") {
      const [{ indexes: pair }] = request.body as { indexes: [string, string] }[];
      return task(null, "indexSwap", failure, () => {
        const [a, b] = [indexes.get(pair[0]), indexes.get(pair[1])];
        if (!a || !b) return notFound(a ? pair[1] : pair[0]);
        indexes.set(pair[0], b);
        indexes.set(pair[1], a);
        server.ops.push({ index: pair[0], kind: "swap", ids: [pair[1]] });
      });
    }
    if (parts[0] !== "indexes" || !parts[1]) return { status: 404, json: {} };
    const uid = parts[1];
    const docs = indexes.get(uid);
    const rest = parts.slice(2).join("/");
    if (method === "GET" && rest === "") {
      if (!docs) return { status: 404, json: body(notFound(uid)) };
      return { status: 200, json: { uid, primaryKey: "id", createdAt: "", updatedAt: "" } };
    }
    if (method === "DELETE" && rest === "")
      return task(uid, "indexDeletion", failure, () => {
        if (!indexes.delete(uid)) return notFound(uid);
        server.ops.push({ index: uid, kind: "drop", ids: [] });
      });
    if (rest === "settings") {
      if (method === "GET") {
        if (!docs) return { status: 404, json: body(notFound(uid)) };
        return { status: 200, json: settings.get(uid) ?? {} };
      }
      return task(uid, "settingsUpdate", failure, () => {
        settings.set(uid, { ...(settings.get(uid) ?? {}), ...(request.body as object) });
      });
    }
    if (method === "GET" && parts[2] === "documents" && parts[3]) {
      const found = docs?.get(decodeURIComponent(parts[3]));
      if (!docs) return { status: 404, json: body(notFound(uid)) };
      if (!found)
        return {
          status: 404,
          json: body({
            status: 404,
            code: "document_not_found",
            type: "invalid_request",
            message: `Document \`${parts[3]}\` not found.`,
          }),
        };
      return { status: 200, json: found };
    }
    if (rest === "documents" && (method === "POST" || method === "PUT")) {
      const sent = request.body as Doc[];
      return task(uid, "documentAdditionOrUpdate", failure, () => {
        const target = indexes.get(uid) ?? new Map<string, Doc>();
        indexes.set(uid, target);
        for (const doc of sent) target.set(doc.id, method === "PUT" ? { ...target.get(doc.id), ...doc } : doc);
        server.ops.push({ index: uid, kind: method === "PUT" ? "update" : "add", ids: sent.map((d) => d.id) });
      });
    }
    if (method === "POST" && rest === "documents/delete-batch") {
      const ids = (request.body as unknown[]).map(String);
      return task(uid, "documentDeletion", failure, () => {
        const target = indexes.get(uid);
        if (!target) return notFound(uid);
        for (const id of ids) target.delete(id);
        server.ops.push({ index: uid, kind: "delete", ids });
      });
    }
    return { status: 404, json: {} };
  };
  const settings = new Map<string, Record<string, unknown>>();

  const door = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString();
      const url = new URL(req.url ?? "/", "http://x");
      const request: Request = {
        method: req.method ?? "GET",
        path: url.pathname,
        body: text ? JSON.parse(text) : undefined,
      };
      server.requests.push(request);
      answer(request).then(
        ({ status, json }) => {
          res.writeHead(status, { "content-type": "application/json" });
          res.end(json === undefined ? "" : JSON.stringify(json));
        },
        (err) => {
          res.writeHead(500, { "content-type": "application/json" });
          res.end(JSON.stringify(body({ ...ERRORS.internal, message: String(err) })));
        },
      );
    });
  });
  await new Promise<void>((resolve) => door.listen(0, "127.0.0.1", resolve));
  server.url = `http://127.0.0.1:${(door.address() as AddressInfo).port}`;
  return server;
}
