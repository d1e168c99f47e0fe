// Writes schema.graphql from the Pothos schema (`npm run schema`); a test fails when it is stale.
import fs from "node:fs";
import { printSchemaFile } from "../src/graphql/print.ts";

fs.writeFileSync(new URL("../schema.graphql", import.meta.url), printSchemaFile());
console.log("wrote schema.graphql");
