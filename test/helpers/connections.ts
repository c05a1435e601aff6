import { expect } from "vitest";
import type { ConnectionRecord } from "../../src/platform/connections/model.ts";
import type { TestAtrium, TestUser } from "./atrium.ts";

/** A tool's result as REST's dispatch answers it. */
export interface ToolAnswer {
  isError?: boolean;
  content?: { text: string }[];
  structuredContent?: Record<string, unknown>;
}

/** One connection as `GET …/connections/:name` answers it (200 required). */
export async function connectionView<View>(
  instance: TestAtrium,
  ws: string,
  name: string,
  user: TestUser = "alice",
) {
  const response = await instance.rest(user, "GET", `/v1/workspaces/${ws}/connections/${name}`);
  expect(response.status).toBe(200);
  return (await response.json()) as View;
}

/** Adds the connection `body` describes to `ws` (201 required). */
export async function addConnection(
  instance: TestAtrium,
  ws: string,
  body: Record<string, unknown>,
  user: TestUser = "alice",
): Promise<void> {
  const added = await instance.rest(user, "POST", `/v1/workspaces/${ws}/connections`, body);
  expect(added.status, await added.clone().text()).toBe(201);
}

/** Calls `tool` through REST's dispatch (200 required) and answers its result. */
export async function callTool(
  instance: TestAtrium,
  ws: string,
  tool: string,
  args: Record<string, unknown> = {},
  user: TestUser = "alice",
): Promise<ToolAnswer> {
  const response = await instance.rest(user, "POST", `/v1/workspaces/${ws}/tools/call`, {
    name: tool,
    arguments: args,
  });
  expect(response.status).toBe(200);
  return (await response.json()) as ToolAnswer;
}

/**
 * A stored connection record for unit tests: connection "srv" of `workspaceId`, no credential,
 * its first snapshot, with `changes` laid over it.
 */
export function connectionRecord(
  workspaceId: string,
  changes: Partial<ConnectionRecord> = {},
): ConnectionRecord {
  return {
    id: `con_${"c".repeat(24)}`,
    name: "srv",
    workspaceId,
    url: "https://mcp.example.com/mcp",
    auth: { kind: "none" },
    createdAt: "2026-12-07T00:00:00.000Z",
    createdBy: `usr_${"a".repeat(24)}`,
    authorizationGeneration: 1,
    snapshotVersion: 1,
    disabled: false,
    ...changes,
  };
}
