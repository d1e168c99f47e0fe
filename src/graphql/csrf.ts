// CSRF prevention at /graphql: a request a browser could have sent from another site's form is
// refused, whichever way its body is read (yoga's own check, or the multipart intake's first).
import { useCSRFPrevention } from "@graphql-yoga/plugin-csrf-prevention";
import type { Plugin as YogaPlugin } from "graphql-yoga";

/**
 * Headers a browser sends only after a CORS preflight, so a request carrying one cannot come
 * from another site's form: yoga's own, Apollo's, and Authorization (a Bearer token).
 */
export const CSRF_HEADERS = ["x-graphql-yoga-csrf", "apollo-require-preflight", "authorization"];

/** A request without any of CSRF_HEADERS that a browser could have sent from another site. */
export const CSRF_REFUSAL = {
  errors: [{ message: "Required CSRF header(s) not present", extensions: { code: "CSRF_HEADER_MISSING" } }],
};

/**
 * Yoga's CSRF prevention, except for a GET asking for text/event-stream: a browser's EventSource
 * and GraphiQL's subscriptions cannot send a header. Nothing is opened by it: a GET runs no
 * mutation, and no request carries credentials its page did not put in it (Bearer tokens, never
 * cookies).
 */
export function csrfPrevention(): YogaPlugin {
  const { onRequestParse } = useCSRFPrevention({ requestHeaders: CSRF_HEADERS });
  return {
    onRequestParse: (payload) =>
      fromEventSource(payload.request.method, payload.request.headers.get("accept"))
        ? undefined
        : onRequestParse?.(payload),
  };
}

/** A GET asking for text/event-stream: a browser's EventSource, or a subscription in GraphiQL. */
export function fromEventSource(method: string | undefined, accept: string | null | undefined): boolean {
  return method === "GET" && (accept ?? "").includes("text/event-stream");
}
