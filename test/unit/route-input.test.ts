// What a REST route's `run` is given keeps fast properties: as an object literal with a getter it
// was a dictionary, made again for every request and kept until a full collection (3.5 KB a
// request promoted out of the young generation), and every read of it a dictionary lookup.
import v8 from "node:v8";
import Fastify from "fastify";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { RateLimits } from "../../src/http/rate-limits.ts";
import { mountRoutes } from "../../src/rest/mount.ts";
import { type RouteInput, route } from "../../src/rest/route.ts";
import type { AppServices } from "../../src/services.ts";

v8.setFlagsFromString("--allow-natives-syntax");
const hasFastProperties = new Function("object", "return %HasFastProperties(object)") as (object: object) => boolean;

const unlimited = { routeConfig: () => ({}), take: async () => {}, takeRequest: async () => {} } as RateLimits;

describe("a route's input", () => {
  it("has fast properties, and reads the request's headers when asked", async () => {
    const inputs: RouteInput<unknown, unknown, unknown>[] = [];
    const app = Fastify();
    await mountRoutes(
      app,
      {} as AppServices,
      [
        route({
          method: "GET",
          path: "/echo/:id",
          operationId: "echo",
          summary: "echo",
          tag: "health",
          auth: "none",
          params: z.object({ id: z.string() }),
          success: { status: 200, description: "the input", schema: z.object({ id: z.string(), asked: z.string() }) },
          errors: [],
          run: async (_ctx, input) => {
            inputs.push(input);
            return { id: input.params.id, asked: input.headers["x-asked"] ?? "" };
          },
          reply: (body) => ({ status: 200, body }),
        }),
      ],
      unlimited,
    );
    for (const id of ["1", "2"]) {
      const answer = await app.inject({ url: `/echo/${id}`, headers: { "x-asked": `asked ${id}` } });
      expect(answer.json()).toEqual({ id, asked: `asked ${id}` });
    }
    expect(inputs.map(hasFastProperties)).toEqual([true, true]);
    await app.close();
  });
});
