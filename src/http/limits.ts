// Bounds on request bodies that REST and GraphQL share.

/** A JSON body, REST's or GraphQL's (docs/http.md#error-codes: 413 PAYLOAD_TOO_LARGE past it). */
export const JSON_BODY_LIMIT = 1024 * 1024;
