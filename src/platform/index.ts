import type { PlatformApp } from "./app.ts";
import { connectionsApp } from "./connections/app.ts";
import { conversationsApp } from "./conversations/app.ts";
import { filesApp } from "./files/app.ts";
import { notificationsApp } from "./notifications/app.ts";
import { skillsApp } from "./skills/app.ts";
import { tasksApp } from "./tasks/app.ts";

/** The platform apps, in the order their tools are listed. Adding an app is one line here. */
export const PLATFORM_APPS: readonly PlatformApp[] = [
  filesApp,
  skillsApp,
  notificationsApp,
  connectionsApp,
  tasksApp,
  conversationsApp,
];
