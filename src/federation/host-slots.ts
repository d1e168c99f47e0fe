// Deliveries to one server at once, per process (FEDERATION_HOST_CONCURRENCY,
// docs/federation.md#delivery). A server that comes back after a pause is sent everything held for
// it: Fedify holds each delivery until the pause ends, then, once one delivery to it succeeds, lets
// every held one go within its release interval (a second), and the queue's workers would all POST
// to it at once. Past the bound, a delivery is not waited for (a worker waiting would hold up
// every other server's deliveries behind one server's backlog): it is queued again for a later
// turn, the turns of one server spaced by how long its deliveries take, so that its backlog comes
// back spread out, about as fast as it is taken in, rather than all at once again.

/** A server's deliveries in flight in this process, and when its next deferred one is due. */
interface HostState {
  inFlight: number;
  /** performance.now() of the last turn given out. */
  nextTurnAt: number;
  /** How long a delivery to it takes, averaged (ms). */
  averageMs: number;
}

/** The average's start, before a server's first delivery is timed. */
const FIRST_GUESS_MS = 100;
/**
 * Turns are at least this far apart, and at most ten minutes away: a server whose POSTs hang (its
 * probe waiting out the fetch's 10 s) does not push its backlog hours out.
 */
const MIN_SPACING_MS = 5;
const MAX_WAIT_MS = 600_000;

export class HostSlots {
  private readonly hosts = new Map<string, HostState>();

  constructor(readonly perHost: number) {}

  /**
   * A slot for a delivery to `host`: a function that gives it back once the delivery is done
   * (saying whether it sent a POST, which alone is timed), or undefined when `perHost` are in flight.
   */
  take(host: string): ((posted: boolean) => void) | undefined {
    let state = this.hosts.get(host);
    if (!state) {
      state = { inFlight: 0, nextTurnAt: 0, averageMs: FIRST_GUESS_MS };
      this.hosts.set(host, state);
    }
    if (state.inFlight >= this.perHost) return undefined;
    state.inFlight++;
    const started = performance.now();
    const held = state;
    let given = false;
    return (posted) => {
      if (given) return;
      given = true;
      held.inFlight--;
      if (posted) held.averageMs = 0.8 * held.averageMs + 0.2 * (performance.now() - started);
      // Forgotten when idle: a map of every server ever sent to would only grow.
      if (held.inFlight === 0 && held.nextTurnAt <= performance.now()) this.hosts.delete(host);
    };
  }

  /**
   * How long a delivery to `host` that found no slot waits before it is tried again: the turn after
   * the last given out, turns spaced by the time one delivery takes divided among the slots.
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
