// After `npm ci --omit=dev` (the image): removes what npm keeps although only development needs
// it. The Prisma CLI and TypeScript are optional peers of @prisma/client, so npm marks them, and
// everything they pull in (Prisma Studio, pglite, effect, react-dom...), `devOptional` rather
// than `dev`, and --omit=dev leaves them installed. Nothing of production reaches a devOptional
// package but through such an optional peer: each one in package-lock.json is removed.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { packages } = JSON.parse(fs.readFileSync(path.join(root, "package-lock.json"), "utf8"));
let removed = 0;
for (const [where, entry] of Object.entries(packages)) {
  if (!where || !entry.devOptional) continue;
  const dir = path.join(root, where);
  if (!fs.existsSync(dir)) continue;
  fs.rmSync(dir, { recursive: true, force: true });
  removed += 1;
}
// Their commands in node_modules/.bin now point nowhere.
const bin = path.join(root, "node_modules", ".bin");
for (const name of fs.existsSync(bin) ? fs.readdirSync(bin) : []) {
  if (!fs.existsSync(path.join(bin, name))) fs.rmSync(path.join(bin, name), { force: true });
}
console.log(`removed ${removed} packages only development uses (optional peers of production ones)`);
