// Deliveries to one server at once, per process (FEDERATION_HOST_CONCURRENCY,
// docs/federation.md#delivery). A server that comes back after a pause is sent everything held for
// it: Fedify holds each delivery until the pause ends, then, once one delivery to it succeeds, lets
// every held one go within its release interval (a second), and the queue's workers would all POST
// to it at once. Past the bound, a delivery is not waited for (a worker waiting would hold up
// every other server's deliveries behind one server's backlog): it is queued again for a later
// turn, the turns of one server spaced by how long its POSTs take, so that its backlog comes back
// spread out, about as fast as it is taken in, rather than all at once again.
//
// A server whose last POST from this process failed is not bounded: what is delivered to it now
// is Fedify's to hold (a paused server is sent nothing, and holding costs no POST), and deferring
// those would only have them come back again and again while it stays dead. Its first answer
// since puts it back under the bound.
import { LRUCache } from "lru-cache";

/** A server's deliveries in flight in this process, and when its next deferred one is due. */
interface HostState {
  inFlight: number;
  /** performance.now() of the last turn given out. */
  nextTurnAt: number;
  /** How long a POST to it takes, averaged (ms). */
  averageMs: number;
  /** Whether its last POST from this process failed (no answer, or a 5xx). */
  failing: boolean;
}

/** The average's start, before a server's first POST is timed. */
const FIRST_GUESS_MS = 100;
/**
 * Turns are at least this far apart, and at most ten minutes away: a server whose POSTs hang
 * (waiting out the fetch's 10 s) does not push its backlog hours out.
 */
const MIN_SPACING_MS = 5;
const MAX_WAIT_MS = 600_000;
/** Servers remembered: those with deliveries in flight or deferred, and those failing. */
const HOSTS = 10_000;

/** How a delivery went, as its slot is given back. */
export interface SlotOutcome {
  /** Whether it sent a POST (a held delivery sends none): only those are timed. */
  posted: boolean;
  /** Whether the POST failed: no answer, or a 5xx. */
  failed: boolean;
}

export class HostSlots {
  private readonly hosts = new LRUCache<string, HostState>({ max: HOSTS });

  constructor(readonly perHost: number) {}

  /**
   * A slot for a delivery to `host`: a function that gives it back once the delivery is done, or
   * undefined when `perHost` are in flight (and the server is not failing).
   */
  take(host: string): ((outcome: SlotOutcome) => void) | undefined {
    let state = this.hosts.get(host);
    if (!state) {
      state = { inFlight: 0, nextTurnAt: 0, averageMs: FIRST_GUESS_MS, failing: false };
      this.hosts.set(host, state);
    }
    if (state.inFlight >= this.perHost && !state.failing) return undefined;
    state.inFlight++;
    const started = performance.now();
    const held = state;
    let given = false;
    return ({ posted, failed }) => {
      if (given) return;
      given = true;
      held.inFlight--;
      if (posted) {
        held.failing = failed;
        held.averageMs = 0.8 * held.averageMs + 0.2 * (performance.now() - started);
      }
      // Forgotten when nothing is left of it here.
      if (held.inFlight === 0 && !held.failing && held.nextTurnAt <= performance.now()) this.hosts.delete(host);
    };
  }

  /**
   * How long a delivery to `host` that found no slot waits before it is tried again: the turn after
   * the last given out, turns spaced by the time one POST takes divided among the slots.
   */
  deferral(host: string): number {
    const state = this.hosts.get(host);
    const now = performance.now();
    if (!state) return MIN_SPACING_MS;
    const spacing = Math.max(MIN_SPACING_MS, state.averageMs / this.perHost);
    state.nextTurnAt = Math.max(now, state.nextTurnAt) + spacing;
    return Math.min(MAX_WAIT_MS, Math.round(state.nextTurnAt - now));
  }
}
