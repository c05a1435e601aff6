import type { ConfigSection } from "../../instance/schema.ts";

export const RETENTION_DAYS_DEFAULT = 30;
export const MAX_PER_WORKSPACE_DEFAULT = 1000;

export interface NotificationSettings {
  /** An entry older than this is removed by the hourly retention pass. */
  retentionDays: number;
  /** Past this many entries in one workspace, the oldest are removed by the same pass. */
  maxPerWorkspace: number;
}

/** instance.json's `notifications` section. */
export const notificationsConfig: ConfigSection<NotificationSettings> = {
  schema: {
    type: "object",
    additionalProperties: false,
    properties: {
      retentionDays: { type: "integer", minimum: 1, maximum: 3650 },
      maxPerWorkspace: { type: "integer", minimum: 10, maximum: 100_000 },
    },
  },
  resolve(section) {
    const file = (section ?? {}) as Partial<NotificationSettings>;
    return {
      retentionDays: file.retentionDays ?? RETENTION_DAYS_DEFAULT,
      maxPerWorkspace: file.maxPerWorkspace ?? MAX_PER_WORKSPACE_DEFAULT,
    };
  },
};
