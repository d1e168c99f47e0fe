// `node --import tsx bench/churn-only.ts`: the resumed-streams figure of bench/churn.ts alone, on a
// fresh database (what `npm run bench` prints among the rest).
import { loadConfig } from "../src/config.ts";
import { createLogger } from "../src/log.ts";
import { closeServices, createServices } from "../src/services.ts";
import { benchChurn } from "./churn.ts";
import { BENCH_SIGNING_KEY, startBenchServer } from "./server.ts";

const server = await startBenchServer();
const config = loadConfig({
  ...process.env,
  DATA_DIR: server.dataDir,
  DATABASE_URL: server.databaseUrl,
  BCRYPT_COST: "4",
  TOKEN_SIGNING_KEY: BENCH_SIGNING_KEY,
});
const services = await createServices(config, server.databaseUrl, createLogger("silent"));
try {
  const churn = await benchChurn(services, server.url, async () => {
    const other = await startBenchServer({ databaseUrl: server.databaseUrl, name: "churnbencher" });
    return { url: other.url, stop: () => other.stop() };
  });
  console.log(JSON.stringify(churn, null, 2));
} finally {
  await closeServices(services);
  await server.stop();
}
