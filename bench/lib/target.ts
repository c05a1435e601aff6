import type { ChildServer } from "./child-server.ts";
import type { ToolCall } from "./tool-call.ts";

export type TargetKey = "bare-sdk" | "plain-hono" | "atrium" | "atrium-oauth";

/** A server that is up, verified, and ready to be loaded with `call`. */
export interface RunningTarget {
  key: TargetKey;
  server: ChildServer;
  call: ToolCall;
}
