// A Server-Sent Events client for tests, as a browser's EventSource reads a stream
// (eventsource-parser), keeping every event it received and the comments (`: ping`).
import { createParser, type EventSourceMessage } from "eventsource-parser";

export interface SseClient {
  status: number;
  /** The JSON body of a refusal. */
  // biome-ignore lint/suspicious/noExplicitAny: a refusal's body is read field by field
  refusal?: any;
  headers: Headers;
  events: EventSourceMessage[];
  comments: string[];
  /** The `index`th event received (from 0), waited for up to `ms`. */
  event(index: number, ms?: number): Promise<EventSourceMessage>;
  /** Resolves when the server ends the stream. */
  ended: Promise<void>;
  close(): void;
}

export async function openSse(url: string, headers: Record<string, string> = {}): Promise<SseClient> {
  const abort = new AbortController();
  const response = await fetch(url, { headers: { accept: "text/event-stream", ...headers }, signal: abort.signal });
  const events: EventSourceMessage[] = [];
  const comments: string[] = [];
  const waiters = new Set<() => void>();
  const client: SseClient = {
    status: response.status,
    headers: response.headers,
    events,
    comments,
    ended: Promise.resolve(),
    close: () => abort.abort(),
    async event(index, ms = 5_000) {
      const deadline = Date.now() + ms;
      while (events.length <= index) {
        if (Date.now() > deadline) throw new Error(`no event within ${ms} ms (${events.length} received)`);
        await new Promise<void>((resolve) => {
          waiters.add(resolve);
          setTimeout(resolve, 50);
        });
      }
      return events[index];
    },
  };
  if (response.status !== 200 || !response.body) {
    client.refusal = await response.json().catch(() => undefined);
    return client;
  }
  const parser = createParser({
    onEvent: (event) => {
      events.push(event);
      for (const wake of waiters) wake();
      waiters.clear();
    },
    onComment: (comment) => comments.push(comment.trim()),
  });
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  client.ended = (async () => {
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        parser.feed(value);
      }
    } catch {
      // aborted by close()
    }
  })();
  return client;
}
