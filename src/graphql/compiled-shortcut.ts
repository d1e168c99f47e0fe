// The compiled-page shortcut at /graphql: a timeline page of a document already answered once is
// answered by its compiled plan (compiled-pages.ts), the executor answering everything else.
import type { FastifyReply, FastifyRequest } from "fastify";
import type { GraphQLSchema } from "graphql";
import type { Context } from "../domain/context.ts";
import { DomainError } from "../domain/errors.ts";
import { answerFor } from "../http/errors.ts";
import { databaseOutage } from "../http/request-log.ts";
import type { AppServices } from "../services.ts";
import { graphqlCaller } from "./caller.ts";
import { answerPage, type CompiledPage, CompiledPages } from "./compiled-pages.ts";

export class CompiledShortcut {
  private readonly compiled: CompiledPages;

  constructor(
    private readonly services: AppServices,
    schema: GraphQLSchema,
  ) {
    this.compiled = new CompiledPages(schema);
  }

  /**
   * Answers a plain request (a POST without uploads or Idempotency-Key) by its compiled plan:
   * whether it did. The answer is in the type yoga would have chosen for its Accept header.
   */
  async answered(request: FastifyRequest, reply: FastifyReply): Promise<boolean> {
    const plan = this.compiled.planOf(request.body);
    const mediaType = plan && regularMediaType(request.headers.accept);
    if (!plan || !mediaType) return false;
    const answer = await compiledAnswer(this.services, request, plan);
    this.services.metrics.compiledPage(answer === undefined ? "executor" : "plan");
    if (answer === undefined) return false;
    reply.header("content-type", `${mediaType}; charset=utf-8`).send(answer);
    return true;
  }

  /** The executor's answer to a plain request, from which a plan is learned. */
  learn(body: unknown, status: number, answer: Buffer): void {
    this.compiled.learn(body, status, answer);
  }
}

/**
 * A compiled plan's answer (compiled-pages.ts) in the context the executor would give it, or
 * undefined to leave the request to the executor: a refusal (missing credentials, a frozen
 * caller, a list one may not read, a `first` out of range) or a failure is answered there, as it
 * always was.
 */
async function compiledAnswer(services: AppServices, request: FastifyRequest, plan: CompiledPage) {
  try {
    const caller = await graphqlCaller(services, request);
    const ctx: Context = { ...services, caller };
    if (services.replicas) ctx.db = await services.replicas.readsFor(caller.account?.id);
    return await answerPage(ctx, plan);
  } catch (err) {
    if (answerFor(err).outage === "database") databaseOutage(services).failed(err, "error");
    else if (!(err instanceof DomainError))
      services.log.warn({ err }, "a compiled GraphQL page failed; the executor answers it");
    return undefined;
  }
}

/**
 * The type yoga answers a query's result in for this Accept header (its result processors,
 * graphql-yoga's use-result-processor.js: the last type that matches wins), or undefined when
 * it would not answer in JSON.
 */
function regularMediaType(accept: string | undefined): string | undefined {
  let chosen: string | undefined;
  const asked = (accept || "*/*").replace(/\s/g, "").toLowerCase().split(",");
  for (const entry of asked.reverse()) {
    const [mediaType, ...params] = entry.split(";");
    if ((params.find((param) => param.includes("charset=")) ?? "charset=utf-8") !== "charset=utf-8") continue;
    const [askedType, askedSubtype] = mediaType.split("/");
    for (const type of ["application/graphql-response+json", "application/json"]) {
      const [pre, suf] = type.split("/");
      if ((askedType === "*" || askedType === pre) && (askedSubtype === "*" || askedSubtype === suf)) chosen = type;
    }
  }
  return chosen;
}
