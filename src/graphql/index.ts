// The GraphQL schema: importing each type file registers it on the builder.
import { builder } from "./builder.ts";
import "./errors.ts";
import "./account.ts";
import "./session.ts";
import "./drive.ts";
import "./note.ts";
import "./social.ts";
import "./notification.ts";
import "./report.ts";
import "./report-forward.ts";
import "./instance.ts";
import "./timeline.ts";
import "./list.ts";
import "./subscription.ts";
import { openEnums } from "./open-enum.ts";

export const schema = openEnums(builder.toSchema({ sortSchema: true }));
