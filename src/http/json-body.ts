import type { Context } from "hono";
import { InvalidInput } from "../errors.ts";

/** Reads a JSON object body, or explains what was wrong with it. */
export async function readJsonObject(c: Context): Promise<Record<string, unknown>> {
  let value: unknown;
  try {
    value = await c.req.json();
  } catch {
    throw new InvalidInput("The body must be a JSON object sent with Content-Type: application/json.");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new InvalidInput("The body must be a JSON object.");
  }
  return value as Record<string, unknown>;
}

export function requireString(body: Record<string, unknown>, field: string): string {
  const value = body[field];
  if (typeof value !== "string") throw new InvalidInput(`Field "${field}" is required and must be a string.`);
  return value;
}
