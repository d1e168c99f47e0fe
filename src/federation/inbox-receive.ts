// Fedify's handling of inbox POSTs, as Murmur hands it what passed the inbox gate
// (src/federation/inbox-gate.ts; docs/federation.md#signatures): what the sender's POST makes this
// server fetch is bounded (src/federation/sender-fetches.ts), and garbage that Fedify would answer
// with a throw (a 500) is 400 INVALID_REQUEST: a body nested too deep to read
// (src/federation/json-depth.ts), a JSON-LD context that cannot be loaded.
import type { Federation, KvStore } from "@fedify/fedify";
import { nestsDeeperThan } from "./json-depth.ts";
import { bytesOf } from "./request-bytes.ts";
import { type SenderFetchBudget, withSenderFetches } from "./sender-fetches.ts";

/** Fedify's refusal in words, which the Fastify side answers `{"error": "INVALID_REQUEST"}`. */
const unreadable = () => new Response("Invalid activity.", { status: 400, headers: { "content-type": "text/plain" } });

/** `federation`, its inbox POSTs received as above; everything else as it was. */
export function guardInboxes<T>(federation: Federation<T>, budget: SenderFetchBudget, kv: KvStore): Federation<T> {
  const receive: Federation<T>["fetch"] = async (request, options) => {
    if (request.method !== "POST") return federation.fetch(request, options);
    if (nestsDeeperThan(await bytesOf(request))) return unreadable();
    try {
      return await withSenderFetches(request, budget, kv, () => federation.fetch(request, options));
    } catch (err) {
      // A context the body names that could not be loaded (it fails, or is not JSON-LD): Fedify
      // throws, as for a passing outage of its own, but the activity cannot be read.
      if (!isJsonLdError(err)) throw err;
      return unreadable();
    }
  };
  return new Proxy(federation, {
    get(target, property) {
      if (property === "fetch") return receive;
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** An error of jsonld.js (a remote context not loaded, a bad one): its name is `jsonld.<kind>`. */
function isJsonLdError(err: unknown): boolean {
  return err instanceof Error && err.name.startsWith("jsonld.");
}
