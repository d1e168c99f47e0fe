// The generated files committed at the root: schema.graphql and openapi.json. `npm run schema`
// writes them; test/generated.test.ts fails when either is stale.
import { printSchema } from "graphql";
import { schema } from "./graphql/index.ts";
import { openApiDocument } from "./rest/openapi.ts";
import { routes } from "./rest/routes.ts";

export function generatedFiles(): Record<string, string> {
  return {
    "schema.graphql": `# Generated from the Pothos schema by \`npm run schema\`. Do not edit.\n\n${printSchema(schema)}\n`,
    "openapi.json": `${JSON.stringify(openApiDocument(routes), null, 2)}\n`,
  };
}
