// A fetch Request made of a body Fastify has already read (src/federation/fastify.ts), which
// answers every read of its body from those bytes. Fedify reads an inbox POST's body twice, each
// time from a clone (the JSON, then the bytes its Digest is checked against), and Murmur's depth
// check once before it (src/federation/inbox-receive.ts): with a stream body each clone tees the
// stream and each read copies it back, ~90-190 µs of CPU a POST against ~30-50 here (a script of
// 5,000 Requests of a 1.2 KB Create; bench/README.md, "Intake, 2026-11-28 (second)").
const decoder = new TextDecoder();

export class BytesRequest extends Request {
  readonly #bytes: Uint8Array;

  /** A request to `url` (`init` without a body) whose body is `bytes`. */
  constructor(url: URL | string, init: RequestInit, bytes: Uint8Array) {
    super(url, init);
    this.#bytes = bytes;
  }

  /** No stream: every read below is answered from the bytes, as often as asked. */
  override get body(): null {
    return null;
  }

  override get bodyUsed(): boolean {
    return false;
  }

  /** The bytes themselves, not a copy: read them, do not change them. */
  get sent(): Uint8Array {
    return this.#bytes;
  }

  /**
   * Itself: its body is never used up, so a clone would answer every read as it does, and Fedify
   * clones a request only to read its body (it changes no request's headers). A new Request at each
   * of its two clones a POST was ~55 µs of the server's CPU an activity (bench/README.md, "Intake,
   * 2026-11-28 (third)").
   */
  override clone(): BytesRequest {
    return this;
  }

  override async arrayBuffer(): Promise<ArrayBuffer> {
    const bytes = this.#bytes;
    return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  }

  override async bytes(): Promise<Uint8Array<ArrayBuffer>> {
    return new Uint8Array(await this.arrayBuffer());
  }

  override async text(): Promise<string> {
    return decoder.decode(this.#bytes);
  }

  override async json(): Promise<unknown> {
    return JSON.parse(decoder.decode(this.#bytes));
  }

  override async blob(): Promise<Blob> {
    return new Blob([this.#bytes as Uint8Array<ArrayBuffer>], { type: this.headers.get("content-type") ?? "" });
  }
}

/** The bytes of `request`'s body, leaving the body itself unread. */
export async function bytesOf(request: Request): Promise<Uint8Array> {
  return request instanceof BytesRequest ? request.sent : new Uint8Array(await request.clone().arrayBuffer());
}
