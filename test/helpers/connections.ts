import { expect } from "vitest";
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
