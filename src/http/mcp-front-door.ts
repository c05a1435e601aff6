import type { IncomingMessage, ServerResponse } from "node:http";
import { CLIENT_CLOSED_REQUEST, ClientClosedRequest, PayloadTooLarge } from "../errors.ts";
import type { Logger } from "../log.ts";
import { admit } from "../workspace/gate.ts";
import type { RouteDeps } from "./context.ts";
import { errorReply } from "./error-response.ts";
import { lingerAfterAnswer } from "./lingering-close.ts";
import { type McpEndpoint, type McpPost, parseJsonBody } from "./mcp/endpoint.ts";
import type { AdmittedCaller } from "./mcp/front-server.ts";
import { checkGrantedScopes } from "./mcp/granted-scopes.ts";
import { HOP_BY_HOP, type McpReply } from "./mcp/reply.ts";
import { type Authenticators, authenticateMcpCaller } from "./middleware/authenticate.ts";
import { declaredLength } from "./middleware/body-limit.ts";
import type { OriginCheck } from "./middleware/origin-guard.ts";
import { logRequest, newRequestId } from "./middleware/request-log.ts";
import { admitAgain, stillAdmitted } from "./middleware/workspace-gate.ts";
import { NodeHeaders, webRequestOf } from "./node-headers.ts";

export interface FrontDoorDeps {
  deps: Pick<
    RouteDeps,
    "workspaces" | "users" | "registries" | "router" | "publicUrl" | "maxBodyBytes" | "dispatch"
  >;
  auth: Authenticators;
  origins: OriginCheck;
  endpoint: McpEndpoint;
  log: Logger;
}

/**
 * Node's `request` listener for what it takes: the handler's promise, settled once the request is
 * answered and logged; `undefined` for a request it hands on.
 */
export type FrontDoor = (request: IncomingMessage, response: ServerResponse) => Promise<void> | undefined;

/**
 * `POST /mcp/ws_…` with a plain path. A path with an escape or a trailing part is left to hono,
 * whose router decodes it; so is every other method and route.
 */
const MCP_POST = /^\/mcp\/([^/?%#]+)(\?|$)/;

/**
 * The MCP front door (adr/0052): `POST /mcp/ws_…`, the one hot route, served straight from Node's
 * `request` event with no web `Request`, `Response` or `AbortSignal` and no hono context, which
 * were about half of a call's CPU. It runs the same steps as the hono app, in its order, by
 * calling the same functions: request id and log line, Host/Origin guard, body limit,
 * authentication (a deactivated person refused), the workspace gate, the token's scopes, then
 * the MCP endpoint; errors become the same answers through errorReply. Every other request
 * goes to hono (the returned function answers `undefined`).
 */
export function createMcpFrontDoor(door: FrontDoorDeps): FrontDoor {
  return (request, response) => {
    if (request.method !== "POST") return undefined;
    const match = MCP_POST.exec(request.url ?? "");
    if (!match) return undefined;
    return serve(door, request, response, match[1] as string);
  };
}

/** What the request log line reports, filled in as the request is admitted. */
interface Served {
  requestId: string;
  principal: string | undefined;
  workspace: string | undefined;
}

async function serve(
  door: FrontDoorDeps,
  request: IncomingMessage,
  response: ServerResponse,
  workspaceParam: string,
): Promise<void> {
  const started = performance.now();
  const served: Served = { requestId: newRequestId(), principal: undefined, workspace: undefined };
  try {
    await admitAndAnswer(door, request, response, workspaceParam, served);
  } catch (error) {
    try {
      writeError(door.log, request, response, error, served.requestId);
    } catch (unwritable) {
      // Nothing is left to answer with; the connection is cut rather than the process.
      door.log.error({ err: unwritable, requestId: served.requestId }, "MCP error answer could not be sent");
      response.destroy();
    }
  }
  const url = request.url ?? "";
  const query = url.indexOf("?");
  logRequest(door.log, {
    requestId: served.requestId,
    method: "POST",
    path: query === -1 ? url : url.slice(0, query),
    status: response.statusCode,
    started,
    principal: served.principal,
    workspace: served.workspace,
  });
}

async function admitAndAnswer(
  door: FrontDoorDeps,
  request: IncomingMessage,
  response: ServerResponse,
  workspaceParam: string,
  served: Served,
): Promise<void> {
  const headers = new NodeHeaders(request);
  const refusal = door.origins(headers.value("host"), headers.value("origin"), `/mcp/${workspaceParam}`);
  if (refusal) return writeJson(response, 403, refusal, served.requestId);
  const maxBytes = door.deps.maxBodyBytes;
  const declared = declaredLength(headers.value("content-length"), headers.value("transfer-encoding"));
  if (declared !== undefined && declared > maxBytes) throw new PayloadTooLarge(maxBytes);
  const caller = await authenticateMcpCaller(door.auth, workspaceParam, { headers });
  served.principal = caller.principal.id;
  const workspaceId = admit(door.deps.workspaces, caller.principal, workspaceParam).workspace.id;
  served.workspace = workspaceId;
  const bytes = await readBody(request, maxBytes);
  // Admitted again once the body has come, as every body behind the gate is (workspace-gate.ts):
  // its sender chose how long it took, and a removal or deactivation meanwhile must hold.
  admitAgain(door.deps.workspaces, door.deps.users, caller.principal, workspaceParam);
  const body = parseJsonBody(bytes);
  await checkGrantedScopes(door.deps, workspaceId, caller, body, served.requestId);
  const admitted: AdmittedCaller = {
    principal: caller.principal,
    workspaceId,
    requestId: served.requestId,
    ...(caller.grant && { scopes: caller.grant.scopes }),
  };
  // Gone while it was being admitted: its call is not made for nobody. Past here the endpoint
  // hears of a close through NodePost.whenAbandoned, which a close that came before never reaches.
  if (response.closed) throw new ClientClosedRequest();
  const post = new NodePost(headers, request, response, bytes, door.deps, admitted);
  const reply = await door.endpoint.handle(post, admitted, body);
  // A client that went away before the answer was ready is logged as nginx does, 499; its calls
  // were cancelled (NodePost.whenAbandoned) and there is nobody to write to.
  if (response.closed) {
    response.statusCode = CLIENT_CLOSED_REQUEST;
    return;
  }
  // The gate once more before the answer is written (NodePost.admitAgain, adr/0154): the last of
  // the three asks the front door makes, each at a point the caller's standing may have changed.
  await writeReply(response, reply, served.requestId, post);
}

/**
 * One POST as the endpoint reads it, its web `Request` built only when asked for, and the one
 * holder of its admission from the body's arrival to its answer: both later asks (a stream's
 * `stillAdmitted`, the answer's `admitAgain`) go through it. A class rather than an object with
 * arrow functions: the sources run through tsx, which gives such a function its name with a
 * property write each time one is made — here on every request (≈ 1% of busy time in the
 * profile; the call ≈ 5% faster without it; the answer's own check as a closure was another
 * ≈ 0.6%).
 */
class NodePost implements McpPost {
  constructor(
    readonly headers: NodeHeaders,
    private readonly request: IncomingMessage,
    private readonly response: ServerResponse,
    private readonly bytes: Buffer,
    private readonly gate: Pick<FrontDoorDeps["deps"], "workspaces" | "users">,
    private readonly caller: AdmittedCaller,
  ) {}

  webRequest(): Request {
    return webRequestOf(this.request, this.bytes.toString());
  }

  stillAdmitted(): boolean {
    return stillAdmitted(
      this.gate.workspaces,
      this.gate.users,
      this.caller.principal.id,
      this.caller.workspaceId,
    );
  }

  /**
   * The gate once more, before anything of the answer is written (adr/0154): an archive, removal
   * or deactivation while the call ran cancelled it, and one that landed after its answer was
   * made is refused here as the gate refuses it, 404 (403 deactivated), instead of the answer.
   * In memory, as the gate: no disk is read.
   */
  admitAgain(): void {
    admitAgain(this.gate.workspaces, this.gate.users, this.caller.principal, this.caller.workspaceId);
  }

  whenAbandoned(abandon: () => void): void {
    const response = this.response;
    response.once("close", () => {
      if (!response.writableFinished) abandon();
    });
  }
}

/** The body's bytes, refused past `maxBytes` (a body without a declared length is counted). */
function readBody(request: IncomingMessage, maxBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let refused = false;
    request.on("data", (chunk: Buffer) => {
      if (refused) return;
      size += chunk.length;
      if (size > maxBytes) {
        refused = true;
        reject(new PayloadTooLarge(maxBytes));
        return;
      }
      chunks.push(chunk);
    });
    request.once("end", () => {
      if (!refused) resolve(Buffer.concat(chunks, size));
    });
    // The body cut off because its client went away: the client's leaving, not Atrium's failure.
    request.once("error", (error) => reject(request.complete ? error : new ClientClosedRequest()));
    // A client gone before the body was asked for (while it was signed in) left a stream already
    // destroyed, its bytes dropped even when all had arrived, which emits nothing more: the handler
    // waited for its end forever, unlogged (test/integration/mcp-gone-before-dispatch.test.ts).
    if (request.destroyed && !request.readableEnded) reject(new ClientClosedRequest());
  });
}

/**
 * Writes `reply` once `post.admitAgain()` (which throws the gate's refusal) has passed. A web
 * answer that is not a stream is read whole first, so nothing is awaited between the check and
 * the write.
 */
async function writeReply(
  response: ServerResponse,
  reply: McpReply,
  requestId: string,
  post: Pick<NodePost, "admitAgain">,
): Promise<void> {
  const web = reply.kind === "web" ? reply.response : undefined;
  const streamed = web?.headers.get("content-type")?.startsWith("text/event-stream") ?? false;
  const text = web?.body && !streamed ? await web.text() : undefined;
  post.admitAgain();
  if (reply.kind === "json") return writeJson(response, reply.status, reply.body, requestId);
  if (reply.kind === "accepted") {
    response.writeHead(202, { "x-request-id": requestId });
    response.end();
    return;
  }
  const head: Record<string, string> = {};
  reply.response.headers.forEach((value, name) => {
    if (!HOP_BY_HOP.has(name)) head[name] = value;
  });
  head["x-request-id"] = requestId;
  const body = reply.response.body;
  if (body === null || text !== undefined) {
    if (text !== undefined) head["content-length"] = String(Buffer.byteLength(text));
    response.writeHead(reply.response.status, head);
    response.end(text);
    return;
  }
  // An SSE stream: written as the SDK produces it; a client that goes away cancels it, which
  // closes the SDK's exchange. A change that ends the caller's access later cancels the call,
  // and its answer is written only if the caller is still admitted when it comes (NodePost's
  // stillAdmitted); either ends the stream without it (adr/0154).
  response.writeHead(reply.response.status, head);
  response.flushHeaders();
  const reader = body.getReader();
  response.once("close", () => void reader.cancel().catch(() => {}));
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    response.write(value);
  }
  response.end();
}

function writeJson(response: ServerResponse, status: number, body: unknown, requestId: string): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    "x-request-id": requestId,
  });
  response.end(text);
}

/**
 * An error as the hono app answers it (errorReply). A 413 ends the connection with a lingering
 * close, as the body limit does there; an error after the answer began can only cut it short.
 */
function writeError(
  log: Logger,
  request: IncomingMessage,
  response: ServerResponse,
  error: unknown,
  requestId: string,
): void {
  if (response.headersSent) {
    log.error({ err: error, requestId }, "MCP answer failed after it began");
    response.destroy();
    return;
  }
  const reply = errorReply(error, log, requestId);
  if (reply.status === 413) {
    response.setHeader("connection", "close");
    lingerAfterAnswer(request);
  }
  for (const [name, value] of Object.entries(reply.headers)) response.setHeader(name, value);
  writeJson(response, reply.status, reply.body, requestId);
}
