// `npm run schema`: writes schema.graphql and openapi.json; test/generated.test.ts fails when they are stale.
import fs from "node:fs";
import { generatedFiles } from "../src/generated-files.ts";

for (const [name, text] of Object.entries(generatedFiles())) {
  fs.writeFileSync(new URL(`../${name}`, import.meta.url), text);
  console.log(`wrote ${name}`);
}
