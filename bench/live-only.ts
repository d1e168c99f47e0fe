// `node_modules/.bin/node --import tsx bench/live-only.ts live churn` (the Node `npm run bench` runs):
// the live-update benches alone, on a smaller seed of their own (BENCH_NOTES, default 200,000;
// BENCH_ACCOUNTS, default 10,000), so a change is measured before and after in minutes, back to
// back. Prints the figures as JSON.
import { seed } from "../src/cli/seed.ts";
import { closeServices } from "../src/services.ts";
import { benchChurn } from "./churn.ts";
import { benchLive } from "./live.ts";
import { load } from "./load.ts";
import { benchServices, rssOf, startBenchServer } from "./server.ts";

const BENCHES = ["live", "churn"] as const;
const chosen = process.argv.slice(2).filter((a) => !a.startsWith("-"));
const unknown = chosen.filter((name) => !(BENCHES as readonly string[]).includes(name));
if (!chosen.length || unknown.length) {
  console.error(`usage: node --import tsx bench/live-only.ts ${BENCHES.join("|")} ...`);
  process.exit(2);
}

const server = await startBenchServer();
const services = await benchServices(server);
try {
  await seed(services, server.databaseUrl, {
    accounts: Number(process.env.BENCH_ACCOUNTS ?? 10_000),
    notes: Number(process.env.BENCH_NOTES ?? 200_000),
    passphrase: "seed-passphrase",
    force: true,
  });
  await services.db.$executeRawUnsafe("VACUUM (ANALYZE)");
  const login = await fetch(`${server.url}/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "viewer", passphrase: "seed-passphrase", captcha_token: "ok" }),
  }).then((r) => r.json() as Promise<{ authorization_token: string }>);
  const figures: Record<string, unknown> = {};
  for (const name of chosen) {
    if (name === "live") {
      // Warm, as the full run's server is by then: its figure without streams is a warm server's.
      await load(`${server.url}/timeline/global`, { token: login.authorization_token });
      let fresh = 0;
      figures.live = await benchLive(
        services,
        server.url,
        login.authorization_token,
        async () => {
          const other = await startBenchServer({ databaseUrl: server.databaseUrl, name: `livebencher${++fresh}` });
          return { url: other.url, rssMb: () => rssOf(other.pid) / 1048576, stop: () => other.stop() };
        },
        server.pid,
      );
    } else {
      figures.churn = await benchChurn(services, server.url, async () => {
        const other = await startBenchServer({ databaseUrl: server.databaseUrl, name: "churnbencher" });
        return { url: other.url, stop: () => other.stop() };
      });
    }
    console.log(JSON.stringify({ [name]: figures[name] }));
  }
} finally {
  await closeServices(services);
  await server.stop();
}
