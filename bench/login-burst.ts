// Logins must not hold up everyone else: /healthz answered one at a time while 32 connections
// log in over and over, at the production bcrypt cost (11). Goal: /healthz p99 under 20 ms.
import { load } from "./load.ts";
import { startBenchServer } from "./server.ts";

export interface LoginBurstFigures {
  healthzP50: number;
  healthzP99: number;
  loginsPerSec: number;
}

const COST = "11";
const SECONDS = 4;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0;
}

/** A server of its own at BCRYPT_COST 11 on `databaseUrl` (or a database of its own). */
export async function benchLoginBurst(databaseUrl?: string): Promise<LoginBurstFigures> {
  const name = "loginbencher";
  const server = await startBenchServer({ env: { BCRYPT_COST: COST }, databaseUrl, name });
  try {
    const body = JSON.stringify({ name, passphrase: "bench-passphrase", captcha_token: "ok" });
    const logins = load(`${server.url}/login`, { method: "POST", body, duration: SECONDS });
    const times: number[] = [];
    let burst = true;
    const over = () => {
      burst = false;
    };
    logins.then(over, over);
    // Past the connections' first handshakes, so every sample falls in the burst.
    await new Promise((resolve) => setTimeout(resolve, 200));
    while (burst) {
      const started = performance.now();
      const answer = await fetch(`${server.url}/healthz`);
      await answer.arrayBuffer();
      if (burst) times.push(performance.now() - started);
    }
    const burstLoad = await logins;
    if (burstLoad.errors) throw new Error(`login burst: ${burstLoad.errors} errors`);
    times.sort((a, b) => a - b);
    const round = (ms: number) => Math.round(ms * 10) / 10;
    return {
      healthzP50: round(percentile(times, 50)),
      healthzP99: round(percentile(times, 99)),
      loginsPerSec: burstLoad.reqPerSec,
    };
  } finally {
    await server.stop();
  }
}
