// The live bench's receiving clients, on a thread of their own (bench/live.ts): 2,000 streams'
// receipts stamped in the bench's own process, beside the autocannon load and the author's posts,
// were late by that process's event-loop delay (p99 100-175 ms on 2 cores), which the delivery
// figure then counted as the server's. Here they wait only for each other. Times are
// `performance.timeOrigin + performance.now()`, one clock for every thread of the process.
import http from "node:http";
import { parentPort, workerData } from "node:worker_threads";

const NOTE_ID = "event: note\nid: ";

/** A time every thread of this process reads alike, in ms. */
export function now(): number {
  return performance.timeOrigin + performance.now();
}

/** Opens a stream and calls `heard(id)` with each note event's id. */
export function subscribe(url: string, token: string, heard: (id: string) => void): Promise<http.ClientRequest> {
  return new Promise((resolve, reject) => {
    const request = http.get(url, { headers: { authorization: `Bearer ${token}`, accept: "text/event-stream" } });
    request.on("response", (response) => {
      if (response.statusCode !== 200) reject(new Error(`stream refused: ${response.statusCode}`));
      // The ids of note events, found by their `event: note\nid: ` lines: a full parser per
      // stream would cost this process more than the server spends sending.
      let rest = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => {
        const text = rest + chunk;
        let at = text.indexOf(NOTE_ID);
        let end = 0;
        while (at !== -1) {
          const lineEnd = text.indexOf("\n", at + NOTE_ID.length);
          if (lineEnd === -1) break;
          heard(text.slice(at + NOTE_ID.length, lineEnd));
          end = lineEnd;
          at = text.indexOf(NOTE_ID, lineEnd);
        }
        rest = text.slice(Math.max(end, text.length - NOTE_ID.length - 24));
      });
      resolve(request);
    });
    request.on("error", reject);
  });
}

/** The streams `urls` names for each of `tokens`, opened 50 at a time. */
export async function openStreams(
  urls: string[],
  tokens: string[],
  heard: (id: string) => void,
): Promise<http.ClientRequest[]> {
  const requests: http.ClientRequest[] = [];
  for (const url of urls) {
    for (let k = 0; k < tokens.length; k += 50) {
      requests.push(...(await Promise.all(tokens.slice(k, k + 50).map((t) => subscribe(url, t, heard)))));
    }
  }
  return requests;
}

/** Run as a worker: opens the streams, then on "stop" closes them and answers what each note's receipts were. */
if (parentPort && workerData?.liveReceivers) {
  const port = parentPort;
  const { urls, tokens } = workerData.liveReceivers as { urls: string[]; tokens: string[] };
  const received = new Map<string, number[]>();
  const requests = await openStreams(urls, tokens, (id) => {
    const at = now();
    const times = received.get(id);
    if (times) times.push(at);
    else received.set(id, [at]);
  });
  port.postMessage({ opened: requests.length });
  port.once("message", () => {
    for (const request of requests) request.destroy();
    port.postMessage({ received: [...received] });
  });
}
