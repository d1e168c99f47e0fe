import { describe, expect, it } from "vitest";
import { parseSnowflake, SERVICE_EPOCH_MS, SnowflakeGenerator, snowflakeTime } from "../../src/db/snowflake.ts";
import { DomainError } from "../../src/domain/errors.ts";

describe("snowflake", () => {
  it("lays out 42 bits of ms since 2022-01-01, 10 of worker, 12 of sequence", () => {
    const at = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
    const id = new SnowflakeGenerator(5, () => at).next();
    expect(id >> 22n).toBe(BigInt(at - SERVICE_EPOCH_MS));
    expect((id >> 12n) & 0x3ffn).toBe(5n);
    expect(id & 0xfffn).toBe(0n);
    expect(snowflakeTime(id).toISOString()).toBe("2026-01-02T03:04:05.678Z");
  });

  it("increases strictly, even past 4096 ids in one millisecond or a clock going back", () => {
    let now = Date.UTC(2026, 0, 1);
    const ids = new SnowflakeGenerator(1, () => now);
    let last = ids.next();
    for (let i = 0; i < 10_000; i++) {
      if (i === 5000) now -= 1000;
      const next = ids.next();
      expect(next > last).toBe(true);
      last = next;
    }
  });

  it("refuses while no worker id is held, and increases across a change of worker id", () => {
    const at = Date.UTC(2026, 0, 1);
    let workerId: number | undefined = 900;
    const ids = new SnowflakeGenerator(
      () => workerId,
      () => at,
    );
    const first = ids.next();
    workerId = undefined;
    expect(ids.available()).toBe(false);
    expect(() => ids.next()).toThrow(DomainError);
    // A smaller worker id, within the same millisecond (or a clock gone back): still larger.
    workerId = 3;
    const second = ids.next();
    expect(second > first).toBe(true);
    expect((second >> 12n) & 0x3ffn).toBe(3n);
    expect(ids.next() > second).toBe(true);
  });

  it.each([
    ["0", 0n],
    ["9223372036854775807", 9223372036854775807n],
    // A 64-bit snowflake above the signed BIGINT range can name nothing stored.
    ["9223372036854775808", undefined],
    ["18446744073709551615", undefined],
    ["18446744073709551616", undefined],
    ["-1", undefined],
    ["1e5", undefined],
    ["", undefined],
    ["12a", undefined],
  ])("parses %j", (text, expected) => {
    expect(parseSnowflake(text)).toBe(expected);
  });
});
