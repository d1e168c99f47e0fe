// What Fedify counts of the activities an inbox takes, into Murmur's /metrics (src/metrics.ts).
// Fedify reports its figures as OpenTelemetry instruments of the meter provider it is given; of
// them, Murmur reads two counters, each activity's fate in the inbox (queued, handled, retried,
// rejected, abandoned, by type) and each signature that failed to verify (by why), and leaves the
// rest unrecorded: no OpenTelemetry SDK runs, the instruments below are those two or nothing.
import type { FederationOptions } from "@fedify/fedify";
import type { Metrics } from "../metrics.ts";
import type { AppServices } from "../services.ts";

type MeterProvider = NonNullable<FederationOptions<AppServices>["meterProvider"]>;
type Meter = ReturnType<MeterProvider["getMeter"]>;
type Attributes = Record<string, unknown>;

/** Fedify's names for an activity's fate, as Murmur's metric words them. */
const RESULTS: Record<string, string> = {
  queued: "accepted",
  processed: "handled",
  retried: "retried",
  rejected: "rejected",
  abandoned: "abandoned",
};

/** Why a signature failed, as Fedify names it, in Murmur's words. */
function signatureReason(reason: unknown): string {
  if (reason === "noSignature") return "unsigned";
  if (reason === "keyFetchError") return "key_not_fetched";
  return "bad_signature";
}

/** `https://www.w3.org/ns/activitystreams#Create` is `Create`; another vocabulary's type keeps its name's end. */
function shortType(type: unknown): string {
  if (typeof type !== "string") return "unknown";
  return type.slice(Math.max(type.lastIndexOf("#"), type.lastIndexOf("/")) + 1).slice(0, 40) || "unknown";
}

const nothing = {
  add() {},
  record() {},
  addCallback() {},
  removeCallback() {},
};

export function fedifyMeters(metrics: Pick<Metrics, "inboxActivity">): MeterProvider {
  const counted: Record<string, (value: number, attributes: Attributes) => void> = {
    "activitypub.inbox.activity": (value, attributes) => {
      const result = RESULTS[String(attributes["activitypub.processing.result"])];
      if (result) metrics.inboxActivity(shortType(attributes["activitypub.activity.type"]), result, "", value);
    },
    "activitypub.signature.verification_failure": (value, attributes) =>
      metrics.inboxActivity(
        "unknown",
        "refused",
        signatureReason(attributes["activitypub.verification.failure_reason"]),
        value,
      ),
  };
  const meter = {
    createCounter: (name: string) => {
      const count = counted[name];
      return count ? { add: (value: number, attributes: Attributes = {}) => count(value, attributes) } : nothing;
    },
    createHistogram: () => nothing,
    createUpDownCounter: () => nothing,
    createGauge: () => nothing,
    createObservableGauge: () => nothing,
    createObservableCounter: () => nothing,
    createObservableUpDownCounter: () => nothing,
    addBatchObservableCallback() {},
    removeBatchObservableCallback() {},
  } as unknown as Meter;
  return { getMeter: () => meter };
}
