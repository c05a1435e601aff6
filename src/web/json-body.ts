import type { StandardSchemaWithJSON } from "@modelcontextprotocol/server";
import type { Context } from "hono";
import { InvalidInput, UnsupportedMediaType } from "../errors.ts";
import { requireAdmin } from "../workspace/gate.ts";
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

/**
 * A JSON object body checked by a strict schema, the tool twin's (`platformInput`) where the route
 * has one: a field the route does not read is refused by name, never dropped (ADR 0095). A
 * dropped field answered success and did something else: `"headers"` for `auth` stored a
 * connection with no credential (test/integration/connections-rest-bodies.test.ts). The refusal is
 * worded as the tool's, then says what the body is.
 */
export async function readJsonBodyAs<I, O>(
  c: Context<AppEnv>,
  schema: StandardSchemaWithJSON<I, O>,
): Promise<O> {
  const standard = schema["~standard"];
  const result = await standard.validate(await readJsonObject(c));
  if (!result.issues) return result.value;
  const problems = result.issues.map((issue) => issue.message).join("\n");
  throw new InvalidInput(
    `${problems}\nThe body is ${bodyShape(standard.jsonSchema.input({ target: "draft-07" }))}.`,
  );
}

/**
 * The body of a change only a workspace admin may make, read as readJsonBodyAs reads it. A caller
 * who is not one is refused (403) before the body is read, whatever it holds: read first, a
 * member's body with a stray field was a 400 describing the admin's body
 * (test/integration/rest-bodies.test.ts "whatever the body"). Asked again once it is read, since
 * reading it admitted the request again (ADR 0129).
 */
export function readAdminBodyAs<I, O>(c: Context<AppEnv>, schema: StandardSchemaWithJSON<I, O>): Promise<O> {
  return readAsAdmin(c, () => readJsonBodyAs(c, schema));
}

/** A JSON object body (a document kept whole) of a change only an admin may make, as readAdminBodyAs. */
export function readAdminJsonObject(c: Context<AppEnv>): Promise<Record<string, unknown>> {
  return readAsAdmin(c, () => readJsonObject(c));
}

async function readAsAdmin<T>(c: Context<AppEnv>, read: () => Promise<T>): Promise<T> {
  requireAdmin(c.get("admission"));
  const body = await read();
  requireAdmin(c.get("admission"));
  return body;
}

/** A body's fields as a reader writes them, `{"name", "auth"?}`: the optional ones marked. */
function bodyShape(jsonSchema: Record<string, unknown>): string {
  const required = new Set((jsonSchema.required as string[] | undefined) ?? []);
  const fields = Object.keys((jsonSchema.properties as Record<string, unknown> | undefined) ?? {});
  return `{${fields.map((field) => `"${field}"${required.has(field) ? "" : "?"}`).join(", ")}}`;
}
