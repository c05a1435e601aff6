import type { Context } from "hono";
import { InvalidInput, UnsupportedMediaType } from "../errors.ts";
import type { AppEnv } from "./app-env.ts";
import { jsonBoundsProblem } from "./json-bounds.ts";

/** `application/json`, with or without parameters such as `charset` (RFC 9110 §8.3.1). */
const JSON_MEDIA_TYPE = /^application\/json[ \t]*(;|$)/i;

/**
 * Reads a JSON object body, or explains what was wrong with it. The Content-Type must say
 * JSON: a browser page on another origin can send `text/plain` without a CORS preflight, and
 * parsing that as JSON would let it act (ADR 0026).
 */
export async function readJsonObject(c: Context<AppEnv>): Promise<Record<string, unknown>> {
  if (!JSON_MEDIA_TYPE.test(c.req.header("content-type") ?? "")) {
    throw new UnsupportedMediaType("Send the body as JSON with Content-Type: application/json.");
  }
  const text = await c.req.text();
  // Its sender chose how long the body took: a request behind the workspace gate is admitted again.
  c.get("admitAgain")?.();
  const tooCostly = jsonBoundsProblem(text);
  if (tooCostly) throw new InvalidInput(`The body ${tooCostly}.`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    // V8's message says what it found and where, e.g. "... in JSON at position 9 (line 1 column 10)".
    throw new InvalidInput(`The body is not valid JSON: ${(error as Error).message}`);
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
