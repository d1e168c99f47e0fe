// JSON-LD expanded once a document (src/federation/expanded-once.ts): Fedify's parse of received
// activities gives what it gave before, with one expansion of the document with its context where
// it made two (and none of what was expanded already).
import { generateKeyPairSync } from "node:crypto";
import { Activity, type Object as APObject } from "@fedify/fedify/vocab";
import { getDocumentLoader } from "@fedify/vocab-runtime";
import jsonld from "@fedify/vocab-runtime/jsonld";
import { describe, expect, it } from "vitest";
import { expandOnce } from "../src/federation/expanded-once.ts";

const loader = getDocumentLoader();
const publicKeyPem = generateKeyPairSync("rsa", { modulusLength: 2048 }).publicKey.export({
  type: "spki",
  format: "pem",
}) as string;
const options = { documentLoader: loader, contextLoader: loader };
const AS = "https://www.w3.org/ns/activitystreams";
const actor = "https://remote.test/users/alice";
const MASTODON = [
  AS,
  "https://w3id.org/security/v1",
  {
    toot: "http://joinmastodon.org/ns#",
    Hashtag: "as:Hashtag",
    Emoji: "toot:Emoji",
    sensitive: "as:sensitive",
    _misskey_reaction: "https://misskey-hub.net/ns#_misskey_reaction",
  },
];

/** Received activities of each kind Murmur takes, as servers send them. */
const documents: Record<string, unknown>[] = [
  {
    "@context": MASTODON,
    id: `${actor}/statuses/1/activity`,
    type: "Create",
    actor,
    published: "2026-11-27T05:00:00Z",
    to: [`${AS}#Public`],
    cc: [`${actor}/followers`],
    object: {
      id: `${actor}/statuses/1`,
      type: "Note",
      attributedTo: actor,
      inReplyTo: "https://local.test/notes/9",
      content: "<p>hello <a href='https://local.test/@bob'>@bob</a> #tag :blob:</p>",
      contentMap: { en: "<p>hello</p>" },
      summary: "cw",
      sensitive: true,
      published: "2026-11-27T05:00:00Z",
      to: [`${AS}#Public`],
      cc: [`${actor}/followers`, "https://local.test/accounts/2"],
      tag: [
        { type: "Mention", href: "https://local.test/accounts/2", name: "@bob@local.test" },
        { type: "Hashtag", href: "https://remote.test/tags/tag", name: "#tag" },
        {
          id: "https://remote.test/emojis/1",
          type: "Emoji",
          name: ":blob:",
          icon: { type: "Image", mediaType: "image/png", url: "https://remote.test/blob.png" },
        },
      ],
      attachment: [{ type: "Document", mediaType: "image/png", url: "https://remote.test/a.png", name: "alt" }],
    },
  },
  { "@context": AS, id: `${actor}#follows/1`, type: "Follow", actor, object: "https://local.test/accounts/2" },
  {
    "@context": AS,
    id: `${actor}#accepts/1`,
    type: "Accept",
    actor,
    object: {
      id: "https://local.test/follows/1",
      type: "Follow",
      actor: "https://local.test/accounts/2",
      object: actor,
    },
  },
  { "@context": AS, id: `${actor}/likes/1`, type: "Like", actor, object: "https://local.test/notes/9" },
  {
    "@context": MASTODON,
    id: `${actor}/reactions/1`,
    type: "EmojiReact",
    actor,
    object: "https://local.test/notes/9",
    content: ":blob:",
    _misskey_reaction: ":blob:",
    tag: [
      {
        id: "https://remote.test/emojis/1",
        type: "Emoji",
        name: ":blob:",
        icon: { type: "Image", url: "https://remote.test/blob.png" },
      },
    ],
  },
  {
    "@context": AS,
    id: `${actor}/statuses/2/activity`,
    type: "Announce",
    actor,
    object: "https://local.test/notes/9",
    to: [`${AS}#Public`],
  },
  {
    "@context": AS,
    id: `${actor}/statuses/1#delete`,
    type: "Delete",
    actor,
    object: { id: `${actor}/statuses/1`, type: "Tombstone" },
  },
  {
    "@context": MASTODON,
    id: `${actor}#updates/1`,
    type: "Update",
    actor,
    object: {
      id: actor,
      type: "Person",
      preferredUsername: "alice",
      name: "Alice",
      inbox: `${actor}/inbox`,
      outbox: `${actor}/outbox`,
      followers: `${actor}/followers`,
      endpoints: { sharedInbox: "https://remote.test/inbox" },
      publicKey: { id: `${actor}#main-key`, owner: actor, publicKeyPem },
      icon: { type: "Image", url: "https://remote.test/alice.png" },
    },
  },
  {
    "@context": AS,
    id: `${actor}#undo/1`,
    type: "Undo",
    actor,
    object: { id: `${actor}/likes/1`, type: "Like", actor, object: "https://local.test/notes/9" },
  },
];

/** What Fedify makes of `document`: the activity and its object in expanded form. */
async function parsed(document: Record<string, unknown>): Promise<unknown> {
  const activity = await Activity.fromJsonLd(structuredClone(document), options);
  const object: APObject | null = await activity.getObject({ ...options, suppressError: true });
  return {
    type: activity.constructor.name,
    activity: await activity.toJsonLd({ format: "expand", contextLoader: loader }),
    object: object && (await object.toJsonLd({ format: "expand", contextLoader: loader })),
  };
}

describe("JSON-LD expanded once a document", () => {
  it("parses received activities as before, expanding each document with its context once", async () => {
    const real = jsonld.expand;
    let withContext = 0;
    jsonld.expand = ((input: unknown, opts: unknown) => {
      if (typeof input === "object" && input !== null && "@context" in input) withContext++;
      return (real as (...args: unknown[]) => unknown).call(jsonld, input, opts);
    }) as typeof jsonld.expand;
    try {
      const before = [];
      for (const document of documents) before.push(await parsed(document));
      expandOnce();
      for (const [i, document] of documents.entries()) {
        withContext = 0;
        const activity = await Activity.fromJsonLd(document, options);
        await activity.getObject({ ...options, suppressError: true });
        // Activity's parse, then its class's: it was expanded twice.
        expect(withContext).toBe(1);
        expect(await parsed(document)).toEqual(before[i]);
      }
      // Answers are copies: what a caller changes is not what the next one is given.
      const [first] = await jsonld.expand(documents[0], { documentLoader: loader, keepFreeFloatingNodes: true });
      delete (first as Record<string, unknown>)["@type"];
      const [again] = await jsonld.expand(documents[0], { documentLoader: loader, keepFreeFloatingNodes: true });
      expect((again as Record<string, unknown>)["@type"]).toEqual([`${AS}#Create`]);
    } finally {
      jsonld.expand = real;
    }
  });

  it("answers an expanded node object as jsonld.js does: itself", async () => {
    const nodes: Record<string, unknown>[] = [];
    const collect = (value: unknown) => {
      if (Array.isArray(value)) value.forEach(collect);
      else if (typeof value === "object" && value !== null) {
        if (!["@value", "@list", "@set"].some((key) => key in value)) nodes.push(value as Record<string, unknown>);
        Object.values(value).forEach(collect);
      }
    };
    for (const document of documents)
      collect(await jsonld.expand(structuredClone(document), { documentLoader: loader, keepFreeFloatingNodes: true }));
    expect(nodes.length).toBeGreaterThan(40);
    for (const node of nodes)
      expect(
        await jsonld.expand(structuredClone(node), { documentLoader: loader, keepFreeFloatingNodes: true }),
      ).toEqual([node]);
  });
});
