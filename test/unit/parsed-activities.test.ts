// A received activity parsed once at its POST (src/federation/parsed-activities.ts): Fedify's
// proof check and its routing parse the same object with the same document loader, each with a
// context loader of its own; the vocabulary is built once for both, and only for them.
import { Activity, Create } from "@fedify/fedify/vocab";
import { getDocumentLoader } from "@fedify/vocab-runtime";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { parseActivitiesOnce } from "../../src/federation/parsed-activities.ts";

const loader = getDocumentLoader();
/** A context loader as Fedify gives each parse: a wrapper of its own around the same loader. */
const wrapped = () => (url: string) => loader(url);
const actor = "https://remote.test/users/alice";

function received(n: number): Record<string, unknown> {
  return {
    "@context": "https://www.w3.org/ns/activitystreams",
    id: `${actor}/statuses/${n}/activity`,
    type: "Create",
    actor,
    published: "2026-11-27T05:00:00Z",
    to: ["https://www.w3.org/ns/activitystreams#Public"],
    object: { id: `${actor}/statuses/${n}`, type: "Note", attributedTo: actor, content: "<p>hi</p>" },
  };
}

/**
 * How many times a Create's vocabulary was built (Create's part of the parse, below the static
 * entry points: Activity's own part runs twice a parse, once for the type and once for Create).
 */
function countParses(of: typeof Activity = Create) {
  const name = `__fromJsonLd__${of.name}__`;
  return vi.spyOn(of as unknown as Record<string, (...args: unknown[]) => unknown>, name);
}

beforeAll(() => parseActivitiesOnce());
afterEach(() => {
  vi.restoreAllMocks();
});

describe("a received activity's parse", () => {
  it("is made once for the proof check and the routing of one POST, and answers the same", async () => {
    const json = received(1);
    const parses = countParses();
    const first = await Activity.fromJsonLd(json, { documentLoader: loader, contextLoader: wrapped() });
    const second = await Activity.fromJsonLd(json, { documentLoader: loader, contextLoader: wrapped() });
    expect(parses).toHaveBeenCalledTimes(1);
    expect(second).toBe(first);
    expect(second).toBeInstanceOf(Create);
    expect(second.id?.href).toBe(`${actor}/statuses/1/activity`);
    const fresh = await Activity.fromJsonLd(received(1), { documentLoader: loader, contextLoader: loader });
    expect(await second.toJsonLd()).toEqual(await fresh.toJsonLd());
  });

  it("is made again for another loader (the queue's signs its fetches), a copy, or another class", async () => {
    const json = received(2);
    const parses = countParses();
    const atPost = await Activity.fromJsonLd(json, { documentLoader: loader, contextLoader: loader });
    const signing = (url: string) => loader(url);
    const inQueue = await Activity.fromJsonLd(json, { documentLoader: signing, contextLoader: loader });
    const copied = await Activity.fromJsonLd({ ...json }, { documentLoader: loader, contextLoader: loader });
    expect(parses).toHaveBeenCalledTimes(3);
    expect(inQueue).not.toBe(atPost);
    expect(copied).not.toBe(atPost);
    // Create's own parse is not Activity's: not kept.
    const created = await Create.fromJsonLd(json, { documentLoader: loader, contextLoader: loader });
    expect(created).not.toBe(atPost);
  });

  it("is not kept when it failed: asked again, it is tried again", async () => {
    const json = { ...received(3), id: "not a url" };
    // Refused before its type is looked at: counted at Activity's part.
    const parses = countParses(Activity);
    const options = { documentLoader: loader, contextLoader: loader };
    await expect(Activity.fromJsonLd(json, options)).rejects.toThrow();
    await expect(Activity.fromJsonLd(json, options)).rejects.toThrow();
    expect(parses).toHaveBeenCalledTimes(2);
  });
});
