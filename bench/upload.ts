// Upload throughput and memory: a 100 MB file streamed to POST /drive over real HTTP, with the
// server's resident memory sampled while it arrives. Goal: RSS growth under 64 MB.
import http from "node:http";
import { Readable } from "node:stream";
import { wavHeader } from "../test/support/media.ts";
import { type BenchServer, rssOf } from "./server.ts";

const SIZE = 100 * 1024 * 1024;
const CHUNK = 64 * 1024;

/** A WAV file of SIZE bytes, made chunk by chunk: the client never holds it whole either. */
function wavStream(): Readable {
  const header = wavHeader(SIZE - 44, 44100, 2);
  const silence = Buffer.alloc(CHUNK);
  let sent = 0;
  return new Readable({
    read() {
      if (sent === 0) {
        sent = header.length;
        this.push(header);
      } else if (sent < SIZE) {
        const part = silence.subarray(0, Math.min(CHUNK, SIZE - sent));
        sent += part.length;
        this.push(part);
      } else {
        this.push(null);
      }
    },
  });
}

export interface UploadFigures {
  megabytes: number;
  seconds: number;
  megabytesPerSecond: number;
  rssBeforeMb: number;
  peakRssGrowthMb: number;
  status: number;
}

export async function benchUpload(server: BenchServer): Promise<UploadFigures> {
  const boundary = "murmurbenchboundary";
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\nbench.wav\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="bench.wav"\r\nContent-Type: audio/wav\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const before = rssOf(server.pid);
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssOf(server.pid));
  }, 10);
  const started = performance.now();
  const status = await new Promise<number>((resolve, reject) => {
    const request = http.request(`${server.url}/drive`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${server.token}`,
        "content-type": `multipart/form-data; boundary=${boundary}`,
        "content-length": head.length + SIZE + tail.length,
      },
    });
    request.on("response", (response) => {
      response.resume();
      response.on("end", () => resolve(response.statusCode ?? 0));
    });
    request.on("error", reject);
    request.write(head);
    const body = wavStream();
    body.on("end", () => request.end(tail));
    body.pipe(request, { end: false });
  });
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  peak = Math.max(peak, rssOf(server.pid));
  const mb = SIZE / (1024 * 1024);
  return {
    megabytes: mb,
    seconds: Number(seconds.toFixed(2)),
    megabytesPerSecond: Number((mb / seconds).toFixed(1)),
    rssBeforeMb: Number((before / 1048576).toFixed(1)),
    peakRssGrowthMb: Number(((peak - before) / 1048576).toFixed(1)),
    status,
  };
}
