// One GraphQL operation through a test server's app, as `who`: its data, with no errors.
import { expect } from "vitest";
import type { TestServer } from "./server.ts";

export async function gql(
  server: Pick<TestServer, "app">,
  query: string,
  variables: Record<string, unknown>,
  who?: { token: string },
) {
  const answer = await server.app.inject({
    method: "POST",
    url: "/graphql",
    headers: { "content-type": "application/json", ...(who ? { authorization: `Bearer ${who.token}` } : {}) },
    payload: JSON.stringify({ query, variables }),
  });
  const body = answer.json();
  expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
  return body.data;
}
