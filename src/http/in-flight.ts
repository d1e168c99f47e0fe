// The bound on requests in flight (docs/protection.md#overload, MAX_IN_FLIGHT): one count for HTTP
// requests (server.ts's hooks) and GraphQL operations over WebSocket (graphql/websocket.ts), which no
// HTTP hook sees once their socket is open.

export class InFlight {
  private count = 0;

  constructor(private readonly max: number) {}

  /**
   * One more in flight: false when that is past the bound, to be refused 503 at once. Counted
   * either way, until `leave`.
   */
  enter(): boolean {
    this.count += 1;
    return this.count <= this.max;
  }

  leave(): void {
    this.count -= 1;
  }
}
