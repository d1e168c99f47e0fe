// The committed schema.graphql text.
import { printSchema } from "graphql";
import { schema } from "./index.ts";

export function printSchemaFile(): string {
  return `# Generated from the Pothos schema by \`npm run schema\`. Do not edit.\n\n${printSchema(schema)}\n`;
}
