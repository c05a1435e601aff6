import { ClientRequestSchema, JSONRPCRequestSchema } from "@modelcontextprotocol/core";
import { ProtocolErrorCode } from "@modelcontextprotocol/server";
import type { z } from "zod";
import { echoableId } from "./echoable-id.ts";
import { describeJsonValue } from "./json-shape.ts";
import { jsonReply, type McpReply } from "./reply.ts";

// Params that are wrong are the client's mistake, and JSON-RPC says so with -32602 Invalid
// params and a message a person can act on. The SDK instead answers a request whose params fail
// its method's schema with -32603 Internal error (or, for tools/call, -32602) carrying zod's JSON
// dump, and its classifier refuses a request whose params are not an object as an invalid
// JSON-RPC body (-32600). Both answers are corrected here, after the fact, so a valid request
// pays nothing (test/integration/mcp-params.test.ts).

const MAX_ISSUES_NAMED = 3;

type RequestSchema = z.ZodType & { shape: { method: { value: string } } };

/** Each client request method's schema, as the SDK's own handlers parse it. */
const SCHEMAS = new Map<string, z.ZodType>(
  (ClientRequestSchema.options as readonly RequestSchema[]).map((schema) => [
    schema.shape.method.value,
    schema,
  ]),
);

/** Why `params` is not valid for `method`, in one line, or undefined when it is (or the method is not known). */
export function invalidParamsMessage(method: string, params: unknown): string | undefined {
  const schema = SCHEMAS.get(method);
  if (schema === undefined) return undefined;
  const parsed = schema.safeParse(params === undefined ? { method } : { method, params });
  return parsed.success ? undefined : describeIssues(method, parsed.error.issues);
}

/**
 * For a single request the SDK refused as malformed: the -32602 answer when what is wrong is
 * only its params, or undefined when the request is malformed in some other way.
 */
export function invalidParamsReply(body: unknown): McpReply | undefined {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return undefined;
  const { id, method, params } = body as Record<string, unknown>;
  if (typeof method !== "string" || echoableId(id) === undefined) return undefined;
  const parsed = JSONRPCRequestSchema.safeParse(body);
  if (parsed.success || !parsed.error.issues.every((issue) => issue.path[0] === "params")) return undefined;
  const message =
    typeof params === "object" && params !== null && !Array.isArray(params)
      ? describeIssues(method, parsed.error.issues)
      : `Invalid params for ${method}: params must be a JSON object of named parameters, not ${describeJsonValue(params)}.`;
  return jsonReply(200, { jsonrpc: "2.0", id, error: { code: ProtocolErrorCode.InvalidParams, message } });
}

function describeIssues(method: string, issues: readonly z.core.$ZodIssue[]): string {
  const named = issues
    .slice(0, MAX_ISSUES_NAMED)
    .map((issue) => `${issue.path.map(String).join(".") || "params"}: ${issue.message}`);
  return `Invalid params for ${method}: ${named.join("; ")}.`;
}
