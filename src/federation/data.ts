// What Fedify hands every dispatcher and listener as `ctx.data`, in a module of its own so that the
// federation's parts can name it without importing federation.ts, which imports them.
import type { AppServices } from "../services.ts";

/** The process's services. */
export type FederationData = AppServices;
