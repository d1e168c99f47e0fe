// Fedify's preloaded JSON-LD contexts are handed to jsonld.js tagged `static`
// (src/federation/document-loader.ts staticPreloaded), so that it resolves and processes the
// ActivityStreams context once, not at every expansion of a received activity.
import type { DocumentLoader } from "@fedify/vocab-runtime";
import jsonld from "@fedify/vocab-runtime/jsonld";
import { describe, expect, it } from "vitest";
import { staticPreloaded } from "../src/federation/document-loader.ts";

const AS = "https://www.w3.org/ns/activitystreams";

function create(n: number) {
  return {
    "@context": AS,
    id: `https://remote.test/notes/${n}/activity`,
    type: "Create",
    actor: "https://remote.test/users/author",
    object: { id: `https://remote.test/notes/${n}`, type: "Note", content: `<p>${n}</p>` },
  };
}

describe("the preloaded contexts", () => {
  it("are resolved by jsonld.js once, not at every expansion, and expand as before", async () => {
    const unreachable: DocumentLoader = async (url) => {
      throw new Error(`fetched ${url}`);
    };
    const loader = staticPreloaded(unreachable);
    const asked: string[] = [];
    const counting = (url: string) => {
      asked.push(url);
      return loader(url);
    };
    const first = await jsonld.expand(create(1), { documentLoader: counting as never });
    const again = await Promise.all(
      [2, 3, 4].map((n) => jsonld.expand(create(n), { documentLoader: counting as never })),
    );
    // At most the first expansion asked (none if another one in this process came first).
    expect(asked.filter((url) => url === AS).length).toBeLessThanOrEqual(1);
    expect(first[0]["@type"]).toEqual(["https://www.w3.org/ns/activitystreams#Create"]);
    expect(again[2][0]["https://www.w3.org/ns/activitystreams#object"]).toEqual([
      {
        "@id": "https://remote.test/notes/4",
        "@type": ["https://www.w3.org/ns/activitystreams#Note"],
        "https://www.w3.org/ns/activitystreams#content": [{ "@value": "<p>4</p>" }],
      },
    ]);
  });

  it("leaves any other URL to the loader it wraps", async () => {
    const loader = staticPreloaded(async (url) => ({ contextUrl: null, document: { asked: url }, documentUrl: url }));
    const other = await loader("https://remote.test/context.jsonld");
    expect(other).toEqual({
      contextUrl: null,
      document: { asked: "https://remote.test/context.jsonld" },
      documentUrl: "https://remote.test/context.jsonld",
    });
    expect(other).not.toHaveProperty("tag");
    expect(await loader(AS)).toMatchObject({ documentUrl: AS, tag: "static" });
    // A name every object inherits is not a preloaded context: a sender's "constructor" is fetched
    // (and refused) as any other, not answered with Object's constructor.
    expect(await loader("constructor")).toMatchObject({ document: { asked: "constructor" } });
  });
});
