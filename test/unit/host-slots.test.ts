// Deliveries to one server at once (src/federation/host-slots.ts): past the bound a delivery waits
// its turn, turns spaced by how long the server's POSTs take; a server whose last POST failed is
// not bounded (Fedify holds what goes to it, without a POST), until it answers again.
import { describe, expect, it } from "vitest";
import { HostSlots } from "../../src/federation/host-slots.ts";

const POSTED = { posted: true, failed: false };
const FAILED = { posted: true, failed: true };

describe("host slots", () => {
  it("give a server as many slots as the bound, per server, and a slot given back is free again", () => {
    const slots = new HostSlots(2);
    const first = slots.take("a.example");
    const second = slots.take("a.example");
    expect(first).toBeDefined();
    expect(second).toBeDefined();
    expect(slots.take("a.example")).toBeUndefined();
    expect(slots.take("b.example")).toBeDefined();
    first?.(POSTED);
    // Given back twice, it frees one slot only.
    first?.(POSTED);
    expect(slots.take("a.example")).toBeDefined();
    expect(slots.take("a.example")).toBeUndefined();
  });

  it("space the turns of those that found no slot, one after another, at most ten minutes away", () => {
    const slots = new HostSlots(2);
    slots.take("a.example");
    slots.take("a.example");
    const waits = Array.from({ length: 4 }, () => slots.deferral("a.example"));
    for (let n = 1; n < waits.length; n++) expect(waits[n]).toBeGreaterThan(waits[n - 1]);
    // A first guess of 100 ms a POST, shared by two slots: about 50 ms apart.
    expect(waits[3] - waits[0]).toBeGreaterThan(100);
    for (let n = 0; n < 100_000; n++) slots.deferral("a.example");
    expect(slots.deferral("a.example")).toBeLessThanOrEqual(600_000);
  });

  it("do not bound a server whose last POST failed, until one answers", () => {
    const slots = new HostSlots(1);
    slots.take("dead.example")?.(FAILED);
    const many = Array.from({ length: 5 }, () => slots.take("dead.example"));
    expect(many.every((slot) => slot !== undefined)).toBe(true);
    // Held deliveries send no POST: the server stays failing.
    for (const slot of many.slice(1)) slot?.({ posted: false, failed: false });
    expect(slots.take("dead.example")).toBeDefined();
    many[0]?.(POSTED);
    // It answered: bounded again (one slot, still taken by the last one given above).
    expect(slots.take("dead.example")).toBeUndefined();
  });
});
