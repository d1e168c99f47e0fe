// Instance-wide announcements (docs/notifications.md#announcements), created by operators.
import type { Announcement, AnnouncementType } from "../../generated/prisma/client.ts";
import type { Services } from "../context.ts";
import { DomainError } from "../errors.ts";

export interface AnnouncementInput {
  type: AnnouncementType;
  title: string;
  description: string;
}

export async function createAnnouncement(services: Services, input: AnnouncementInput): Promise<Announcement> {
  if (!input.title.trim() || !input.description.trim()) {
    throw new DomainError("INVALID_REQUEST", { detail: "an announcement needs a title and a description" });
  }
  return services.db.announcement.create({
    data: { id: services.ids.next(), type: input.type, title: input.title, description: input.description },
  });
}
