import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { Unauthenticated } from "../../src/errors.ts";
import { derivePrincipalId, type Principal } from "../../src/identity/principal.ts";
import type { IdentityProvider } from "../../src/identity/provider.ts";
import { parseInstance } from "../../src/instance/load.ts";
import type { InstanceConfig } from "../../src/instance/schema.ts";
import type { Clock } from "../../src/kernel/clock.ts";
import type { Timers } from "../../src/kernel/timers.ts";
import { createLogger, type Logger } from "../../src/log.ts";
import type { PlatformApp } from "../../src/platform/app.ts";
import { PLATFORM_APPS } from "../../src/platform/index.ts";
import { configSections } from "../../src/platform/kit.ts";
import { type RunningAtrium, startAtrium } from "../../src/server.ts";
import { DEFAULT_MCP_ERA, type McpEra, versionNegotiationFor } from "./mcp-eras.ts";

/** The header the test identity provider reads: `x-test-user: <name>`. */
export const TEST_USER_HEADER = "x-test-user";
export const TEST_ISSUER = "test";
/** Names that start with this are org admins, like an IdP group claim would say. */
export const TEST_ORG_ADMIN_PREFIX = "orgadmin";

/** The principal the test provider vouches for when a request says `x-test-user: <name>`. */
export function testPrincipal(name: string): Principal {
  return {
    id: derivePrincipalId(TEST_ISSUER, name),
    displayName: name,
    email: `${name}@example.test`,
    orgRole: name.startsWith(TEST_ORG_ADMIN_PREFIX) ? "admin" : "member",
  };
}

/** Many people on one instance, told apart by a header; a request without it is refused. */
export function createTestProvider(): IdentityProvider {
  return {
    name: "test",
    async authenticate(request) {
      const name = request.headers.get(TEST_USER_HEADER);
      if (name === null || name === "") throw new Unauthenticated();
      return testPrincipal(name);
    },
  };
}

export interface TestAtriumOptions {
  /** Use the provider instance.json names (`dev`) instead of the test provider. */
  dev?: boolean;
  /** A provider of the test's own in place of the test one (createTestProvider), e.g. one that waits. */
  identityProvider?: IdentityProvider;
  /**
   * instance.json's `auth` (with `session` when the adapter needs its secret): a real identity
   * provider instead of the test one. No request then says who it is by header: `user` sends
   * nothing, and a caller passes its own credential (a session cookie, a bearer token) in `headers`.
   */
  auth?: Record<string, unknown>;
  session?: Record<string, unknown>;
  /** Reuse this temp dir (its `data/` is the root) instead of making a fresh one. */
  dir?: string;
  /** instance.json's `http.publicUrl`; `http://127.0.0.1:8787` unless given. */
  publicUrl?: string;
  maxUploadBytes?: number;
  maxBodyBytes?: number;
  /** instance.json's `http.idleTimeoutSeconds`. */
  idleTimeoutSeconds?: number;
  /** instance.json's `http.requestTimeoutSeconds`. */
  requestTimeoutSeconds?: number;
  /** instance.json's `http.drainSeconds`. */
  drainSeconds?: number;
  idleEvictMs?: number;
  /** The instance clock (test/helpers/fake-time.ts), so a test moves time instead of waiting. */
  clock?: Clock;
  /** How the instance waits (a stream's heartbeat, the scheduler); a FakeTime's, to fire by hand. */
  timers?: Timers;
  /** instance.json's `skills`; `orgDir` is relative to the instance's temp dir, as in a real file. */
  skills?: { orgDir?: string; maxInstructionsBytes?: number };
  /** Other sections of instance.json, by name: a platform app's own (test/integration/throwaway-app.test.ts). */
  sections?: Record<string, unknown>;
  /** Where the instance logs (e.g. capturingLogger()); silent unless given. */
  log?: Logger;
  /** The platform apps to serve instead of PLATFORM_APPS (a test adds a throwaway one). */
  apps?: readonly PlatformApp[];
}

/** `null` sends no identity header; in dev mode, and with a real `auth`, the name is ignored. */
export type TestUser = string | null;

export type RestBody = Record<string, unknown> | unknown[] | string | Uint8Array | ReadableStream<Uint8Array>;

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  text: string;
}

export interface McpClientOptions {
  /** Sent with every request as well, e.g. `authorization`. */
  headers?: Record<string, string>;
  /** The protocol revision the client speaks; DEFAULT_MCP_ERA unless given. */
  era?: McpEra;
}

export interface TestAtrium {
  url: string;
  /** The temp dir this instance owns; the data root is `root`, inside it. */
  dir: string;
  root: string;
  atrium: RunningAtrium;
  config: InstanceConfig;
  /** A fetch against the instance as `user`; an object body is sent as JSON, anything else raw. */
  rest(
    user: TestUser,
    method: string,
    path: string,
    body?: RestBody,
    headers?: Record<string, string>,
  ): Promise<Response>;
  /**
   * A request whose path is sent byte for byte (fetch would normalise `..` and `%2e`) and whose
   * Host and Origin can be set freely.
   */
  raw(
    user: TestUser,
    method: string,
    path: string,
    options?: { headers?: Record<string, string>; body?: string | Uint8Array },
  ): Promise<RawResponse>;
  /**
   * The SDK's own (v2) Client, connected to `/mcp/<workspaceId>` as `user` in `options.era`, sending
   * `options.headers` with every request as well. Closed by `stop()`.
   */
  mcpClient(user: TestUser, workspaceId: string, options?: McpClientOptions): Promise<Client>;
  /** Closes the server but keeps the dir, so another instance can start on the same root. */
  close(): Promise<void>;
  /** Closes this instance and starts a fresh one on the same dir and options, with `changes`. */
  restart(changes?: Partial<TestAtriumOptions>): Promise<TestAtrium>;
  /** Closes the server and removes the dir. */
  stop(): Promise<void>;
}

/** Starts an isolated instance on 127.0.0.1, port 0, with its data root in a fresh temp dir. */
export async function startTestAtrium(options: TestAtriumOptions = {}): Promise<TestAtrium> {
  const dir = options.dir ?? (await mkdtemp(join(tmpdir(), "atrium-test-")));
  const root = join(dir, "data");
  await mkdir(root, { recursive: true });
  const config = parseInstance(
    {
      auth: options.auth ?? { adapter: "dev" },
      ...(options.session === undefined ? {} : { session: options.session }),
      storage: { root: "./data" },
      http: {
        host: "127.0.0.1",
        port: 0,
        publicUrl: options.publicUrl ?? "http://127.0.0.1:8787",
        ...(options.maxBodyBytes === undefined ? {} : { maxBodyBytes: options.maxBodyBytes }),
        ...(options.idleTimeoutSeconds === undefined
          ? {}
          : { idleTimeoutSeconds: options.idleTimeoutSeconds }),
        ...(options.requestTimeoutSeconds === undefined
          ? {}
          : { requestTimeoutSeconds: options.requestTimeoutSeconds }),
        ...(options.drainSeconds === undefined ? {} : { drainSeconds: options.drainSeconds }),
      },
      ...(options.maxUploadBytes === undefined ? {} : { files: { maxUploadBytes: options.maxUploadBytes } }),
      ...(options.skills === undefined ? {} : { skills: options.skills }),
      ...options.sections,
      log: { level: "silent" },
    },
    { source: "test instance", baseDir: dir, sections: configSections(options.apps ?? PLATFORM_APPS) },
  );
  let atrium: RunningAtrium;
  try {
    atrium = await startAtrium(config, {
      log: options.log ?? createLogger("silent"),
      ...(options.dev || options.auth
        ? {}
        : { identityProvider: options.identityProvider ?? createTestProvider() }),
      ...(options.idleEvictMs === undefined ? {} : { idleEvictMs: options.idleEvictMs }),
      ...(options.clock === undefined ? {} : { clock: options.clock }),
      ...(options.timers === undefined ? {} : { timers: options.timers }),
      ...(options.apps === undefined ? {} : { apps: options.apps }),
    });
  } catch (error) {
    if (options.dir === undefined) await rm(dir, { recursive: true, force: true });
    throw error;
  }

  const url = atrium.url;
  const clients = new Set<Client>();
  let closed: Promise<void> | undefined;

  const identity = (user: TestUser): Record<string, string> =>
    user === null || options.dev || options.auth ? {} : { [TEST_USER_HEADER]: user };

  const close = (): Promise<void> => {
    closed ??= (async () => {
      await Promise.allSettled([...clients].map((client) => client.close()));
      clients.clear();
      await atrium.close();
    })();
    return closed;
  };

  return {
    url,
    dir,
    root,
    atrium,
    config,
    async rest(user, method, path, body, headers = {}) {
      const init: RequestInit & { duplex?: "half" } = { method, headers: { ...identity(user), ...headers } };
      if (body instanceof ReadableStream) {
        init.body = body;
        init.duplex = "half";
      } else if (typeof body === "string") {
        init.body = body;
      } else if (body instanceof Uint8Array) {
        // A copy: fetch's BodyInit wants a Uint8Array over a plain ArrayBuffer.
        init.body = new Uint8Array(body);
      } else if (body !== undefined) {
        init.body = JSON.stringify(body);
        init.headers = { "content-type": "application/json", ...init.headers };
      }
      return fetch(`${url}${path}`, init);
    },
    raw(user, method, path, { headers = {}, body } = {}) {
      return new Promise((resolve, reject) => {
        const req = httpRequest(
          { host: "127.0.0.1", port: atrium.port, method, path, headers: { ...identity(user), ...headers } },
          (res) => {
            const chunks: Buffer[] = [];
            res.on("data", (chunk: Buffer) => chunks.push(chunk));
            res.on("error", reject);
            res.on("end", () => {
              const buffer = Buffer.concat(chunks);
              resolve({
                status: res.statusCode ?? 0,
                headers: res.headers,
                body: buffer,
                text: buffer.toString("utf8"),
              });
            });
          },
        );
        req.on("error", reject);
        req.end(body);
      });
    },
    async mcpClient(user, workspaceId, { headers = {}, era = DEFAULT_MCP_ERA } = {}) {
      const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp/${workspaceId}`), {
        requestInit: { headers: { ...identity(user), ...headers } },
      });
      const client = new Client(
        { name: "atrium-test", version: "0.0.0" },
        { capabilities: {}, versionNegotiation: versionNegotiationFor(era) },
      );
      await client.connect(transport);
      clients.add(client);
      return client;
    },
    close,
    async restart(changes = {}) {
      await close();
      return startTestAtrium({ ...options, ...changes, dir });
    },
    async stop() {
      await close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A logger that keeps every line it writes at `level` and above, parsed, in `lines`. */
export function capturingLogger(level = "info"): { log: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const log = createLogger(level, {
    write(line: string) {
      lines.push(JSON.parse(line) as Record<string, unknown>);
    },
  });
  return { log, lines };
}

/** The `err` pino wrote on a captured line; throws when the line has none. */
export function loggedErr(line: Record<string, unknown> | undefined): {
  type: string;
  message: string;
  stack: string;
} {
  const err = line?.err as { type: string; message: string; stack: string } | undefined;
  if (err === undefined) throw new Error(`no err on log line ${JSON.stringify(line)}`);
  return err;
}

/** The caller's first workspace, creating it on first contact as `GET /v1/bootstrap` does. */
export async function bootstrapWorkspace(instance: TestAtrium, user: TestUser): Promise<string> {
  const response = await instance.rest(user, "GET", "/v1/bootstrap");
  if (response.status !== 200) throw new Error(`bootstrap as ${user}: HTTP ${response.status}`);
  const body = (await response.json()) as { workspaces: Array<{ id: string }> };
  const first = body.workspaces[0];
  if (!first) throw new Error(`bootstrap as ${user} returned no workspace`);
  return first.id;
}

/** The POST headers the Streamable HTTP transport requires. */
export const MCP_POST_HEADERS = {
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
} as const;
