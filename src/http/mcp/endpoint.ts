import {
  classifyInboundRequest,
  isJSONRPCRequest,
  type JSONRPCRequest,
  type MessageExtraInfo,
  PROTOCOL_VERSION_META_KEY,
  type Tool,
  UnsupportedProtocolVersionError,
  WebStandardStreamableHTTPServerTransport,
} from "@modelcontextprotocol/server";
import type { EndedAccess } from "../../sources/calls-in-flight.ts";
import { jsonBoundsProblem } from "../../web/json-bounds.ts";
import { echoableId, UNUSABLE_ID } from "./echoable-id.ts";
import type { AdmittedCaller, FrontServers } from "./front-server.ts";
import { inputResponsesProblem } from "./input-responses.ts";
import { invalidParamsReply } from "./invalid-params.ts";
import { refuseOversizedBatch, serveLegacyJson } from "./legacy-exchange.ts";
import { mediaTypeRefusal, type PostHeaders } from "./media-types.ts";
import { serveModernExchange } from "./modern-exchange.ts";
import { paramHeaderRefusal, paramHeadersOf } from "./param-headers.ts";
import {
  LEGACY_PROTOCOL_VERSIONS,
  MODERN_PROTOCOL_VERSION,
  SERVED_PROTOCOL_VERSIONS,
} from "./protocol-versions.ts";
import { jsonReply, type McpReply } from "./reply.ts";
import { isAnswer, type Readmitted, type ReplySink, RequestMuxTransport } from "./request-mux-transport.ts";
import { HEADER_MISMATCH, type HeaderRefusal, standardHeaderRefusal } from "./standard-headers.ts";

/**
 * One POST as the endpoint reads it: its headers, a web `Request` only if one is needed, word of
 * its client going away before the answer, which cancels the requests still running, and whether
 * the gate still admits its caller, asked before a stream's answer (adr/0154).
 */
export interface McpPost extends Readmitted {
  headers: PostHeaders;
  /**
   * The request as a web `Request`, asked for only when a 2025 call streams its progress (the
   * SDK's transport builds that stream). The hono route has one; the front door builds it then.
   */
  webRequest(): Request;
}

/** The tool a caller's `tools/call` names, as `tools/list` shows it to them; undefined if none. */
export type FindTool = (caller: AdmittedCaller, name: string) => Promise<Tool | undefined>;

/**
 * Serves one stateless Streamable HTTP POST in either era. The SDK's classifier reads the body
 * (the 2026-07-28 `_meta` envelope or its absence) and the headers; the request then goes to the
 * long-lived server of its era through that server's mux, with a fresh per-request SDK transport
 * doing the HTTP half: JSON, or an SSE stream when the call reports progress (adr/0029).
 */
export class McpEndpoint {
  private readonly legacyMux = new RequestMuxTransport();
  private readonly modernMux = new RequestMuxTransport();

  constructor(
    private readonly servers: FrontServers,
    private readonly maxBodyBytes: number,
    private readonly findTool: FindTool,
  ) {}

  async start(): Promise<void> {
    await this.servers.legacy.connect(this.legacyMux);
    await this.servers.modern.connect(this.modernMux);
  }

  /** `body` is the request's JSON, already parsed by parseJsonBody (the caller checks its scopes first). */
  async handle(post: McpPost, caller: AdmittedCaller, body: unknown): Promise<McpReply> {
    const headers = post.headers;
    const refused = mediaTypeRefusal(headers);
    if (refused) return refused;
    if (body === NOT_UTF8) return parseError("Parse error: the request body is not UTF-8");
    if (body === NOT_JSON) return parseError("Parse error: the request body is not valid JSON");
    if (body instanceof TooCostly) return parseError(`Parse error: the request body ${body.problem}`);
    const oversized = refuseOversizedBatch(body);
    if (oversized) return oversized;
    const protocolVersion = headers.get("mcp-protocol-version");
    const authInfo = { token: "", clientId: "", scopes: [], extra: { atrium: caller } };
    if (isPlainLegacyRequest(body, protocolVersion)) return this.serveLegacy(post, body, authInfo);
    // Before the classifier, which reads a version it does not know as a 2026 request missing its
    // envelope (-32602) rather than as a version this server does not speak. An empty header on a
    // body in the 2026 form names no version: it is a malformed required header, which the
    // classifier answers -32020, not a request for the version "".
    const namesVersion = protocolVersion !== null && !(protocolVersion === "" && claimsEnvelope(body));
    if (namesVersion && !SERVED_PROTOCOL_VERSIONS.includes(protocolVersion)) {
      const supported = claimsEnvelope(body) ? [MODERN_PROTOCOL_VERSION] : SERVED_PROTOCOL_VERSIONS;
      return unsupportedVersion(protocolVersion, supported, requestId(body));
    }
    const route = classifyInboundRequest({
      httpMethod: "POST",
      body,
      ...(protocolVersion !== null && { protocolVersionHeader: protocolVersion }),
      ...optionalHeader("mcpMethodHeader", headers.get("mcp-method")),
      ...optionalHeader("mcpNameHeader", headers.get("mcp-name")),
    });
    if (route.kind === "reject") {
      if (route.cell === "invalid-json-rpc-body") {
        const explained = unusableIdReply(body) ?? invalidParamsReply(body);
        if (explained) return explained;
      }
      return jsonRpcError(route.httpStatus, route.code, route.message, route.data, requestId(body));
    }
    if (route.kind === "legacy") {
      // Under a 2026-07-28 header the classifier leaves only a response or a batch to the 2025
      // era; neither is a 2026 message, and the version itself is served.
      if (protocolVersion === MODERN_PROTOCOL_VERSION) {
        const what = route.reason === "batch" ? "a batch" : "a response";
        const message = `Invalid Request: a ${MODERN_PROTOCOL_VERSION} POST carries one request or notification, not ${what}.`;
        return jsonRpcError(400, INVALID_REQUEST, message, undefined, null);
      }
      return this.serveLegacy(post, body, authInfo);
    }
    // A request in the 2026 form is told what server/discover lists; initialize finds the rest.
    const revision = route.classification.revision;
    if (revision !== MODERN_PROTOCOL_VERSION) {
      return unsupportedVersion(revision ?? "none", [MODERN_PROTOCOL_VERSION], requestId(body));
    }
    if (route.messageKind === "request") {
      const refused = await this.refuseModernRequest(route.message, headers, caller);
      if (refused) return refused;
    }
    return serveModernExchange(route.message, route.classification, authInfo, this.modernMux, post);
  }

  /**
   * Cancels, in both eras, the calls in flight of the callers whose access a change just ended
   * (adr/0154): an archived workspace's (`{ workspaceId }`), a person's in a workspace they were
   * removed from (`{ workspaceId, principalId }`), a deactivated person's everywhere
   * (`{ principalId }`). Each is cancelled as its own client's `notifications/cancelled` would
   * (adr/0065): the tool's signal aborts, and the exchange ends without its answer.
   */
  cancelCalls(ended: EndedAccess): void {
    const ends = (caller: AdmittedCaller) =>
      (ended.workspaceId === undefined || caller.workspaceId === ended.workspaceId) &&
      (ended.principalId === undefined || caller.principal.id === ended.principalId);
    const reason = "The caller's access to this workspace ended.";
    this.legacyMux.cancelCallers(ends, reason);
    this.modernMux.cancelCallers(ends, reason);
  }

  async close(): Promise<void> {
    await this.servers.legacy.close();
    await this.servers.modern.close();
  }

  /**
   * What the 2026-07-28 edge refuses before dispatch, in the spec's order: standard headers that
   * are missing or disagree with the body, then the `Mcp-Param-*` headers of the called tool's
   * `x-mcp-header` parameters, then a malformed `inputResponses` map.
   */
  private async refuseModernRequest(
    message: JSONRPCRequest,
    headers: PostHeaders,
    caller: AdmittedCaller,
  ): Promise<McpReply | undefined> {
    const refusal =
      standardHeaderRefusal(
        {
          protocolVersion: headers.get("mcp-protocol-version"),
          method: headers.get("mcp-method"),
          name: headers.get("mcp-name"),
        },
        message.method,
        message.params,
      ) ?? (await this.paramHeaderRefusal(message, headers, caller));
    if (refusal) {
      const text = `Bad Request: the request headers and body disagree: ${refusal.message}`;
      return jsonRpcError(400, HEADER_MISMATCH, text, { mismatch: { header: refusal.header } }, message.id);
    }
    const malformed = inputResponsesProblem(message.params);
    return malformed ? jsonRpcError(400, INVALID_PARAMS, malformed, undefined, message.id) : undefined;
  }

  /**
   * A tools/call's headers against the tool its caller would reach. An unknown tool declares none:
   * the call itself answers that it is unknown.
   */
  private async paramHeaderRefusal(
    message: JSONRPCRequest,
    headers: PostHeaders,
    caller: AdmittedCaller,
  ): Promise<HeaderRefusal | undefined> {
    const params = message.params;
    if (message.method !== "tools/call" || typeof params?.name !== "string") return undefined;
    const declared = paramHeadersOf((await this.findTool(caller, params.name))?.inputSchema);
    return declared.length === 0 ? undefined : paramHeaderRefusal(declared, params.arguments, headers);
  }

  private async serveLegacy(
    post: McpPost,
    body: unknown,
    authInfo: MessageExtraInfo["authInfo"],
  ): Promise<McpReply> {
    // JSON unless the client asked for progress and can read a stream: a stateless 2025
    // response has nowhere else to put a notification. The stream is the SDK transport's.
    if (!(acceptsEventStream(post.headers) && asksForProgress(body))) {
      return serveLegacyJson(body, authInfo, this.legacyMux, post);
    }
    const http = new WebStandardStreamableHTTPServerTransport({
      enableJsonResponse: false,
      maxRequestBodySize: this.maxBodyBytes,
      supportedProtocolVersions: [...LEGACY_PROTOCOL_VERSIONS],
    });
    // A cancelled call gets no answer, so its stream ends without one; so does a call whose caller
    // the gate no longer admits when its answer comes (adr/0154): the change's cancellation runs
    // once its write is done, and the gate refuses them from the moment the index shows it.
    const sink: ReplySink = {
      send: (message, options) =>
        isAnswer(message) && !post.stillAdmitted() ? http.close() : http.send(message, options),
      cancelled: () => void http.close(),
    };
    http.onmessage = (message, extra) => this.legacyMux.receive(message, extra, sink);
    post.whenAbandoned(() => this.legacyMux.abandon(sink));
    return {
      kind: "web",
      response: await http.handleRequest(post.webRequest(), { authInfo, parsedBody: body }),
    };
  }
}

/**
 * Reads the body whole, as the Node adapter serves it from the socket, instead of letting the
 * transport pull it through a web stream. The body limit is enforced before this by
 * http/middleware/body-limit.ts.
 */
export async function readJsonBody(request: Request): Promise<unknown> {
  return parseJsonBody(new Uint8Array(await request.arrayBuffer()));
}

/**
 * The body's JSON. Bytes that are not UTF-8, or text that is not JSON, become a marker that
 * handle() answers with a parse error: a lenient decoder would store U+FFFD in place of each bad
 * byte (a file's name) as though the client had sent it.
 */
export function parseJsonBody(bytes: Uint8Array): unknown {
  let text: string;
  try {
    text = UTF8.decode(bytes);
  } catch {
    return NOT_UTF8;
  }
  const tooCostly = jsonBoundsProblem(text);
  if (tooCostly) return new TooCostly(tooCostly);
  try {
    return JSON.parse(text);
  } catch {
    return NOT_JSON;
  }
}

const UTF8 = new TextDecoder("utf-8", { fatal: true });
const NOT_UTF8 = Symbol("request body is not UTF-8");
const NOT_JSON = Symbol("request body is not JSON");
/** A body past a bound of json-bounds.ts: what it is, for the parse error. */
class TooCostly {
  constructor(readonly problem: string) {}
}
const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;
const INVALID_PARAMS = -32602;

function parseError(message: string): McpReply {
  return jsonRpcError(400, PARSE_ERROR, message, undefined, null);
}

function unsupportedVersion(requested: string, supported: readonly string[], id: unknown): McpReply {
  const error = new UnsupportedProtocolVersionError({ supported: [...supported], requested });
  const message = `Unsupported protocol version "${requested}": use ${supported.join(", ")}.`;
  return jsonRpcError(400, error.code, message, error.data, id);
}

function optionalHeader<K extends string>(key: K, value: string | null): Partial<Record<K, string>> {
  return value === null ? {} : ({ [key]: value } as Record<K, string>);
}

function acceptsEventStream(headers: PostHeaders): boolean {
  return headers.get("accept")?.includes("text/event-stream") ?? false;
}

/**
 * A single 2025-era request the SDK's classifier would route to the 2025 server, recognised
 * without the classifier's type guards (zod parses that fail, and cost, on every request): an
 * object with no `result` or `error` (so no response), no envelope claim in `params._meta`, and
 * no protocol-version header other than a 2025 one. The SDK's own request guard still decides
 * that it is a request. Anything else goes through the classifier.
 */
function isPlainLegacyRequest(body: unknown, protocolVersion: string | null): boolean {
  if (!isPlainObject(body) || "result" in body || "error" in body) return false;
  if (protocolVersion !== null && !LEGACY_PROTOCOL_VERSIONS.includes(protocolVersion)) return false;
  return !claimsEnvelope(body) && isJSONRPCRequest(body);
}

/** Whether a single message claims the 2026-07-28 form: a protocol version in `params._meta`. */
function claimsEnvelope(body: unknown): boolean {
  const params = isPlainObject(body) ? body.params : undefined;
  const meta = isPlainObject(params) ? params._meta : undefined;
  return isPlainObject(meta) && PROTOCOL_VERSION_META_KEY in meta;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function asksForProgress(body: unknown): boolean {
  const meta = (body as { params?: { _meta?: { progressToken?: unknown } } } | null)?.params?._meta;
  return meta?.progressToken !== undefined;
}

/** The body's id as an error may echo it (echoable-id.ts), else null. */
function requestId(body: unknown): string | number | null {
  return echoableId((body as { id?: unknown } | null)?.id) ?? null;
}

/**
 * A single request refused for a numeric id that is not a safe integer: said as such, with no id,
 * since JSON.parse may already have rounded it into another request's.
 */
function unusableIdReply(body: unknown): McpReply | undefined {
  const id = (body as { id?: unknown } | null)?.id;
  if (Array.isArray(body) || typeof id !== "number" || echoableId(id) !== undefined) return undefined;
  return jsonRpcError(400, INVALID_REQUEST, UNUSABLE_ID, undefined, null);
}

function jsonRpcError(status: number, code: number, message: string, data: unknown, id: unknown): McpReply {
  const error = data === undefined ? { code, message } : { code, message, data };
  return jsonReply(status, { jsonrpc: "2.0", error, id });
}
