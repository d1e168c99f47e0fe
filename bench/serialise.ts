// What serialising answers by their response schemas (fast-json-stringify, as Fastify does with
// the route table's schemas) gives over JSON.stringify, on a real home page of 20 notes: both
// take turns on the same page, in the same process.
import fastJson from "fast-json-stringify";
import { z } from "zod";
import type { Context } from "../src/domain/context.ts";
import { timeline } from "../src/domain/timelines/service.ts";
import { inlineJsonSchema } from "../src/rest/openapi.ts";
import { notesReply } from "../src/rest/routes/timelines.ts";
import { FullNoteShape } from "../src/rest/views/note.ts";
import { medianOf } from "./load.ts";

export interface Serialisation {
  bytes: number;
  jsonStringifyMicros: number;
  schemaMicros: number;
}

export async function benchSerialise(ctx: Context, rounds = 5, perRound = 4000): Promise<Serialisation> {
  const { body } = notesReply(await timeline(ctx, "home", {}), ctx);
  const stringify = fastJson(inlineJsonSchema(z.array(FullNoteShape)) as never);
  const time = (serialise: (value: unknown) => string) => {
    const started = process.hrtime.bigint();
    for (let i = 0; i < perRound; i++) serialise(body);
    return Number(process.hrtime.bigint() - started) / 1000 / perRound;
  };
  const plain: number[] = [];
  const schema: number[] = [];
  for (let round = 0; round < rounds; round++) {
    plain.push(time(JSON.stringify));
    schema.push(time(stringify));
  }
  return {
    bytes: Buffer.byteLength(stringify(body)),
    jsonStringifyMicros: Math.round(medianOf(plain) * 10) / 10,
    schemaMicros: Math.round(medianOf(schema) * 10) / 10,
  };
}
