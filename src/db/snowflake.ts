// Snowflake ids (docs/http.md#ids): 42 bits of ms since 2022-01-01, 10 bits of worker id, 12 bits
// of sequence.
import { DomainError } from "../domain/errors.ts";

export const SERVICE_EPOCH_MS = Date.UTC(2022, 0, 1);
const MAX_SEQUENCE = 0xfff;
// Canonical decimal only: "0123" is not the id 123, so each id has one spelling.
const SNOWFLAKE = /^(?:0|[1-9][0-9]{0,19})$/;
const MAX_SNOWFLAKE = (1n << 64n) - 1n;
/** Ids are stored as PostgreSQL BIGINT (signed): no id above this exists. */
export const MAX_STORED_ID = (1n << 63n) - 1n;

/** The worker id an instance may mint with now; undefined while it holds none (src/db/worker-lease.ts). */
export type WorkerIdSource = () => number | undefined;

export class SnowflakeGenerator {
  private lastMs = -1;
  private sequence = 0;
  private lastWorkerId: number | undefined;
  private readonly workerId: WorkerIdSource;

  constructor(
    workerId: number | WorkerIdSource,
    private readonly now: () => number = Date.now,
  ) {
    if (typeof workerId === "number") {
      checkWorkerId(workerId);
      this.workerId = () => workerId;
    } else {
      this.workerId = workerId;
    }
  }

  /** Whether ids can be minted now: false while the instance holds no worker id. */
  available(): boolean {
    return this.workerId() !== undefined;
  }

  /** The next id; 503 SERVICE_UNAVAILABLE while the instance holds no worker id. */
  next(): bigint {
    const workerId = this.workerId();
    if (workerId === undefined) {
      throw new DomainError("SERVICE_UNAVAILABLE", {
        detail: "no snowflake worker id is held: its lease could not be renewed",
      });
    }
    let ms = Math.max(this.now() - SERVICE_EPOCH_MS, this.lastMs);
    if (workerId !== this.lastWorkerId) {
      checkWorkerId(workerId);
      // Another worker id (the last one's lease was lost): a millisecond past the last id's, so
      // that ids keep increasing whichever of the two worker ids is larger.
      if (ms === this.lastMs) ms += 1;
      this.sequence = 0;
      this.lastWorkerId = workerId;
    } else if (ms === this.lastMs) {
      this.sequence = (this.sequence + 1) & MAX_SEQUENCE;
      // Sequence used up within this millisecond: borrow the next one, keeping ids increasing.
      if (this.sequence === 0) ms += 1;
    } else {
      this.sequence = 0;
    }
    this.lastMs = ms;
    return (BigInt(ms) << 22n) | (BigInt(workerId) << 12n) | BigInt(this.sequence);
  }
}

function checkWorkerId(workerId: number): void {
  if (!Number.isInteger(workerId) || workerId < 0 || workerId > 1023) throw new RangeError("workerId: 0 to 1023");
}

/** `text` as a 64-bit snowflake, or undefined when it is not one. */
export function parseSnowflake64(text: string): bigint | undefined {
  if (!SNOWFLAKE.test(text)) return undefined;
  const id = BigInt(text);
  return id <= MAX_SNOWFLAKE ? id : undefined;
}

/** The id `text` names, or undefined when it is not a snowflake or names nothing that can exist. */
export function parseSnowflake(text: string): bigint | undefined {
  const id = parseSnowflake64(text);
  return id !== undefined && id <= MAX_STORED_ID ? id : undefined;
}

/** The smallest id minted at `ms` (ms since 1970): every id minted then or later is at least this. */
export function snowflakeAt(ms: number): bigint {
  return BigInt(ms - SERVICE_EPOCH_MS) << 22n;
}

export function snowflakeTime(id: bigint): Date {
  return new Date(Number(id >> 22n) + SERVICE_EPOCH_MS);
}
