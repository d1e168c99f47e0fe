// A local note's ActivityPub id, written into the outbox row of every note created or deleted, is
// made as a prefix and the id (src/federation/notes.ts noteUris): the same URI Fedify's URI
// template gives the note's path, for any id and public URL.
import { createFederation, MemoryKvStore } from "@fedify/fedify";
import { Note } from "@fedify/fedify/vocab";
import { describe, expect, it } from "vitest";
import type { FederationData } from "../../src/federation/data.ts";
import { noteUris, registerNotes } from "../../src/federation/notes.ts";
import type { AppServices } from "../../src/services.ts";

describe("a local note's id", () => {
  it("is what Fedify's template gives its path", () => {
    const federation = createFederation<FederationData>({ kv: new MemoryKvStore() });
    registerNotes(federation);
    for (const publicUrl of ["http://127.0.0.2:41234", "https://murmur.example", "https://xn--mrmur-kva.example/"]) {
      const services = { config: { publicUrl } } as AppServices;
      const { noteUri } = noteUris(federation, services);
      const ctx = federation.createContext(new URL(publicUrl), services);
      for (const id of [1n, 9n, 10n, 649051904213073920n, 2n ** 63n - 1n]) {
        expect(noteUri(id)).toBe(ctx.getObjectUri(Note, { id: id.toString() }).href);
      }
    }
  });
});
