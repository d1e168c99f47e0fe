// JSON-LD expanded once a document. Fedify's vocabulary parses an object with jsonld.js's
// expansion at every class of its hierarchy: Activity.fromJsonLd expands a Create to learn its
// type, Create.fromJsonLd expands the same document again, then Activity's and Object's parse
// expand what Create expanded, and so on for the Note it carries: seven expansions for a received
// Create(Note), two of them of the document with its context, ~15% of the server's CPU taking
// notes in (bench/README.md, "Federation at scale"). Fedify has no hook for it, so jsonld.js's
// expand is wrapped, once, for the whole process (as src/federation/parsed-keys.ts wraps the key
// parse), with two answers it already knows:
// - a document it expanded before, asked again with the same loader (the same object: its caller
//   hands it on unchanged), is answered what it was then;
// - a node object that an expansion answered (expanded form, which expansion leaves as it is) is
//   answered itself.
// Every answer's nodes are copies of the nodes it knows (Fedify's parse deletes the `@type` of the
// node it is given); what they hold is shared: neither the parse nor jsonld.js changes it. A deep
// copy of every answer cost more than the expansions it saved (bench/README.md).
import jsonld from "@fedify/vocab-runtime/jsonld";

type Expand = typeof jsonld.expand;
type ExpandOptions = Parameters<Expand>[1];

/** Documents expanded, by the object given: the loader they were expanded with and the answer. */
const expandedOf = new WeakMap<object, { loader: unknown; answer: Promise<unknown[]> }>();
/** Node objects of answers given: already expanded. */
const answered = new WeakSet<object>();
/** Keys of an expanded object that is no node: expanding it again would not answer it as is. */
const NOT_A_NODE = ["@value", "@list", "@set", "@graph", "@context"];

let wrapped = false;

/** Wraps jsonld.js's expand as above, for Fedify's parse (whose only options are these two). */
export function expandOnce(): void {
  if (wrapped) return;
  wrapped = true;
  const expand: Expand = jsonld.expand.bind(jsonld);
  jsonld.expand = ((input: unknown, options?: ExpandOptions) => {
    if (typeof input !== "object" || input === null || Array.isArray(input) || !fedifysOptions(options))
      return expand(input as Parameters<Expand>[0], options);
    if (answered.has(input) && !NOT_A_NODE.some((key) => key in input)) return Promise.resolve([copied(input)]);
    const loader = options?.documentLoader;
    let known = expandedOf.get(input);
    if (!known || known.loader !== loader) {
      known = { loader, answer: expand(input as Parameters<Expand>[0], options).then(remembered) };
      expandedOf.set(input, known);
      const forgotten = known;
      // A failure is not kept: asked again, it is tried again.
      known.answer.catch(() => {
        if (expandedOf.get(input) === forgotten) expandedOf.delete(input);
      });
    }
    return known.answer.then((answer) => answer.map(copied));
  }) as Expand;
}

/** Only what Fedify's parse asks: its loader, free-floating nodes kept (answers differ otherwise). */
function fedifysOptions(options: ExpandOptions | undefined): boolean {
  if (!options) return false;
  if (options.keepFreeFloatingNodes !== true) return false;
  for (const key of Object.keys(options)) if (key !== "documentLoader" && key !== "keepFreeFloatingNodes") return false;
  return true;
}

/** An expansion's answer with every object in it remembered as answered. */
function remembered(answer: unknown[]): unknown[] {
  const remember = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(remember);
    else if (typeof value === "object" && value !== null) {
      answered.add(value);
      for (const inner of Object.values(value)) remember(inner);
    }
  };
  remember(answer);
  return answer;
}

/** A copy of node `value` (what it holds shared), remembered as answered. */
function copied(value: unknown): unknown {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return value;
  const copy = { ...value };
  answered.add(copy);
  return copy;
}
