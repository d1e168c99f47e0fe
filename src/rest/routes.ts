// The REST route table: every documented path, the service it calls, and how its output maps
// to the documented snake_case shape. Errors are mapped by http/errors.ts.
import type { Route } from "./route.ts";
import { accountRoutes } from "./routes/accounts.ts";
import { adminInstanceRoutes } from "./routes/admin-instances.ts";
import { driveRoutes } from "./routes/drive.ts";
import { healthRoutes } from "./routes/health.ts";
import { listRoutes } from "./routes/lists.ts";
import { noteRoutes } from "./routes/notes.ts";
import { notificationRoutes } from "./routes/notifications.ts";
import { reportForwardRoutes } from "./routes/report-forward.ts";
import { reportRoutes } from "./routes/reports.ts";
import { searchRoutes } from "./routes/search.ts";
import { socialRoutes } from "./routes/social.ts";
import { streamingRoutes } from "./routes/streaming.ts";
import { timelineRoutes } from "./routes/timelines.ts";

export const routes: Route[] = [
  ...accountRoutes,
  ...socialRoutes,
  ...noteRoutes,
  ...timelineRoutes,
  ...listRoutes,
  ...searchRoutes,
  ...driveRoutes,
  ...notificationRoutes,
  ...reportRoutes,
  ...reportForwardRoutes,
  ...adminInstanceRoutes,
  ...streamingRoutes,
  ...healthRoutes,
];
