// What Fedify's vocabulary (2.3.6) lacks of what Murmur sends: Mastodon's `blurhash` of an
// attachment (docs/federation.md#notes: attachments carry it). A Document with one writes it
// into its expanded form as `toot:blurhash`; an activity or Note whose JSON carries such a
// Document compacts it as `blurhash`, the plain key Mastodon and Misskey read, by a context term
// added to the one Fedify compacts with. The Linked Data signature and the object proof Fedify
// makes are over this same JSON, so they hold.
import { Create, Document, Note } from "@fedify/fedify/vocab";
import { isBlurhashValid } from "blurhash";

const BLURHASH = "http://joinmastodon.org/ns#blurhash";

type JsonLdOptions = Parameters<Document["toJsonLd"]>[0];

/** An attachment with its blurhash, as Mastodon sends one. */
export class BlurhashDocument extends Document {
  constructor(
    values: ConstructorParameters<typeof Document>[0] & { blurhash?: string | null },
    options?: ConstructorParameters<typeof Document>[1],
  ) {
    const { blurhash, ...rest } = values;
    super(rest, options);
    this.blurhash = blurhash || null;
  }

  blurhash: string | null;

  override async toJsonLd(options: JsonLdOptions = {}): Promise<unknown> {
    const json = await super.toJsonLd(options);
    if (!this.blurhash) return json;
    if (options.format === "expand" && Array.isArray(json)) {
      (json[0] as Record<string, unknown>)[BLURHASH] = [{ "@value": this.blurhash }];
    } else if (json && typeof json === "object") {
      (json as Record<string, unknown>).blurhash = this.blurhash;
    }
    return json;
  }
}

type Context = (string | Record<string, string>)[];

const contexts = new Map<string, Promise<Context>>();

/** The context Fedify compacts `type`'s objects with, and the blurhash term. */
function contextOf(name: string, make: () => Create | Note): Promise<Context> {
  let context = contexts.get(name);
  if (!context) {
    context = make()
      .toJsonLd({ format: "compact" })
      .then((json) => {
        const base = (json as { "@context": unknown })["@context"];
        // Fedify's own terms include nested definitions its option's type does not name.
        return [...(Array.isArray(base) ? base : [base]), { blurhash: BLURHASH }] as Context;
      });
    contexts.set(name, context);
  }
  return context;
}

/** A Note whose compact JSON names its attachments' blurhash `blurhash`. */
export class NoteWithBlurhash extends Note {
  override async toJsonLd(options: Parameters<Note["toJsonLd"]>[0] = {}): Promise<unknown> {
    // Fedify's object dispatcher asks for no format, which a Note with content compacts anyway.
    if (options.format === "expand" || options.context) return super.toJsonLd(options);
    return super.toJsonLd({ ...options, format: "compact", context: await contextOf("Note", () => new Note({})) });
  }
}

/** A Create whose compact JSON names its Note's attachments' blurhash `blurhash`. */
export class CreateWithBlurhash extends Create {
  override async toJsonLd(options: Parameters<Create["toJsonLd"]>[0] = {}): Promise<unknown> {
    if (options.format === "expand" || options.context) return super.toJsonLd(options);
    return super.toJsonLd({ ...options, format: "compact", context: await contextOf("Create", () => new Create({})) });
  }
}

/** The JSON a received object came in, where Fedify kept only its enclosing activity's. */
const sources = new WeakMap<object, unknown>();

/** Remembers `object`'s JSON as the `object` of the activity `activity` was read from. */
export function rememberSource(object: object, activity: Create): void {
  const json = (activity as unknown as { _cachedJsonLd?: unknown })._cachedJsonLd;
  if (json && typeof json === "object") sources.set(object, (json as Record<string, unknown>).object);
}

/**
 * A received note's attachments' blurhashes by URL: Fedify's Document drops `toot:blurhash`, and
 * keeps no JSON of an object read inside another, so they are read from the JSON the note came in
 * (its own when fetched alone, else its Create's), under the key Mastodon, Misskey and Murmur send.
 * Anything but a well-formed hash is none.
 */
export function blurhashesOf(note: object): Map<string, string> {
  const found = new Map<string, string>();
  const json = (note as unknown as { _cachedJsonLd?: unknown })._cachedJsonLd ?? sources.get(note);
  if (!json || typeof json !== "object") return found;
  const attachment = (json as Record<string, unknown>).attachment;
  for (const item of Array.isArray(attachment) ? attachment : [attachment]) {
    if (!item || typeof item !== "object") continue;
    const record = item as Record<string, unknown>;
    const { url } = record;
    // The JSON Fedify keeps of a signed activity is compacted again with its own context, which
    // names the term by its IRI.
    const term = record.blurhash ?? record[BLURHASH] ?? record["toot:blurhash"];
    const blurhash = Array.isArray(term) ? (term[0] as { "@value"?: unknown } | undefined)?.["@value"] : term;
    const href = typeof url === "string" ? url : (url as { href?: unknown } | null)?.href;
    if (typeof href !== "string" || typeof blurhash !== "string") continue;
    if (blurhash.length <= 200 && isBlurhashValid(blurhash).result) found.set(href, blurhash);
  }
  return found;
}
