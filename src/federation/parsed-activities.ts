// Received activities parsed once at their POST. Before it answers an inbox POST, Fedify parses
// the activity's JSON twice: to check its Object Integrity Proofs (verifyObject parses, then finds
// none and answers nothing) and again to route it, the same object with the same document loader.
// Each parse is given a context loader of its own (a new wrapper around the same one), so
// src/federation/expanded-once.ts cannot tell their expansions the same, and each builds the whole
// vocabulary again: about a third of the ~0.8 ms the three parses of a received Create(Note) took
// of the server's CPU (bench/README.md, "Intake, 2026-11-27 (seventh)"). Fedify has no hook for
// it, so Activity's static parse is wrapped, once, for the whole process (as
// src/federation/parsed-keys.ts wraps the key's): the same object parsed again with the same
// document loader gets its first parse. The queue's parse is untouched: its object is read back
// from the queue, and its loader signs fetches as the instance actor.
import { Activity } from "@fedify/fedify/vocab";

type Parse = typeof Activity.fromJsonLd;

/** Parses by the object parsed: the document loader it was parsed with and the answer. */
const parsed = new WeakMap<object, { loader: unknown; activity: ReturnType<Parse> }>();
let wrapped = false;

/** Activity.fromJsonLd, its answers kept by the object parsed and its document loader. */
export function parseActivitiesOnce(): void {
  if (wrapped) return;
  wrapped = true;
  const parse = Activity.fromJsonLd;
  Activity.fromJsonLd = function (this: typeof Activity, json, options) {
    // Another class's parse that reached this one by inheritance is its own.
    if (this !== Activity || typeof json !== "object" || json === null) return parse.call(this, json, options);
    const loader = options?.documentLoader;
    const known = parsed.get(json);
    if (known && known.loader === loader) return known.activity;
    const activity = parse.call(this, json, options);
    const kept = { loader, activity };
    parsed.set(json, kept);
    // What failed to parse is not kept: asked again, it is tried again.
    activity.catch(() => {
      if (parsed.get(json) === kept) parsed.delete(json);
    });
    return activity;
  } as Parse;
}
