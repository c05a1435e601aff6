import {
  type CallToolResult,
  Client,
  type FetchLike,
  InMemoryTransport,
  type jsonSchemaValidator,
  SdkError,
  SdkErrorCode,
  type StandardSchemaV1,
  StreamableHTTPClientTransport,
  type Tool,
  type Transport,
} from "@modelcontextprotocol/client";
import { SkillsClient } from "@modelcontextprotocol/client/ext/skills";
import type { McpServer } from "@modelcontextprotocol/server";
import { type Clock, isWithin, systemClock } from "../kernel/clock.ts";
import { ATRIUM_VERSION } from "../version.ts";
import { CALLER_META_KEY, type Caller } from "./caller-meta.ts";
import { ConnectCut } from "./connect-cut.ts";
import { OutboundFailure } from "./guarded-fetch.ts";
import { withRelayableMeta } from "./relayed-meta.ts";
import type { Source, SourceCall, SourceClosing } from "./source.ts";

/**
 * How a source is reached: an SDK server in this process on an in-memory linked pair (a
 * platform app's listing, whose calls go to its tool table instead, adr/0058), or a remote
 * server over Streamable HTTP. Host-owned `_meta` is only ever attached on `in-memory`.
 */
export type SourceTransport =
  | { kind: "in-memory"; createServer: () => McpServer }
  | {
      kind: "streamable-http";
      url: URL;
      headers?: Record<string, string>;
      /** How requests leave the process (sources/guarded-fetch.ts); the platform's fetch if absent. */
      fetch?: FetchLike;
      /** A listing older than this is taken again on the next ask, for a server that never says it changed. */
      listMaxAgeMs?: number;
      /**
       * What checks a tool's structured result against its output schema; the SDK's default ajv
       * matches the server's `pattern`s with JavaScript's backtracking RegExp (adr/0064).
       */
      jsonSchemaValidator?: jsonSchemaValidator;
    };

/** A skill a remote server publishes, as its SKILL.md says it. */
export interface RemoteSkill {
  name: string;
  description: string;
  body: string;
}

/** The most `tools/list` pages one listing follows; a server still paging past it is refused. */
export const MAX_LIST_PAGES = 20;

/** A server whose `tools/list` was still handing out cursors after MAX_LIST_PAGES pages. */
export class UnfinishedListing extends Error {
  constructor() {
    super(`The server's tools/list had not finished after ${MAX_LIST_PAGES} pages.`);
  }
}

/** Told each progress report the source's server sends while one call runs. */
export type ProgressListener = (progress: { progress: number; total?: number; message?: string }) => void;

/** A result schema that adopts what the in-process server already validated, unchanged. */
const VALIDATED_BY_SERVER: StandardSchemaV1<CallToolResult> = {
  "~standard": { version: 1, vendor: "atrium", validate: (value) => ({ value: value as CallToolResult }) },
};

/**
 * A call reached a source after it was closed for good: a newer client serves in its place, or the
 * connection is out of service. It is refused rather than connecting a client nothing would close.
 */
export class SourceRetired extends Error {
  constructor(readonly source: string) {
    super(`The client of "${source}" was closed while this call waited: call the tool again.`);
    this.name = "SourceRetired";
  }
}

export class McpSource implements Source {
  private client: Promise<Client> | undefined;
  private tools: Promise<Tool[]> | undefined;
  private listedAt = 0;
  private server: McpServer | undefined;
  /** Ends the current remote client's connect, and anything it sends after: by `close("now")`. */
  private cut: ConnectCut | undefined;
  /** Closed for good (`close`), not reset: no call connects a client again. */
  private retired = false;

  constructor(
    readonly name: string,
    private readonly transport: SourceTransport,
    private readonly clock: Clock = systemClock,
  ) {}

  /**
   * The source's own tool list (not namespaced), every page of it, cached until the server says
   * it changed or, for a remote server, until it is older than `listMaxAgeMs`.
   */
  listTools(): Promise<Tool[]> {
    const maxAgeMs = this.transport.kind === "streamable-http" ? this.transport.listMaxAgeMs : undefined;
    // Listed after now: the clock was stepped back since, and the list's age is unknown (ADR 0168).
    if (maxAgeMs !== undefined && !isWithin(this.clock(), this.listedAt, maxAgeMs)) this.tools = undefined;
    if (!this.tools) {
      this.listedAt = this.clock();
      const listing: Promise<Tool[]> = this.connected()
        .then(listEveryPage)
        .catch((error: unknown) => {
          if (this.tools === listing) this.tools = undefined;
          throw error;
        });
      this.tools = listing;
    }
    return this.tools;
  }

  /** What the server said about itself when it connected: its revision, capabilities, instructions. */
  async describe(): Promise<{
    protocolVersion: string | undefined;
    hasTools: boolean;
    instructions: string | undefined;
    serverInfo: { name: string; version: string } | undefined;
  }> {
    const client = await this.connected();
    const info = client.getServerVersion();
    return {
      protocolVersion: client.getNegotiatedProtocolVersion(),
      hasTools: client.getServerCapabilities()?.tools !== undefined,
      instructions: client.getInstructions(),
      serverInfo: info && { name: info.name, version: info.version },
    };
  }

  /**
   * The skills a server offers through the Skills Extension, each read in full and verified
   * against its entry's digest: at most `max`, none when the server does not offer the extension.
   * An entry that is not valid is left out, never guessed at.
   */
  async skills(max: number): Promise<RemoteSkill[]> {
    const skills = new SkillsClient(await this.connected(), { skipInvalid: true });
    if (!skills.supported) return [];
    const { skills: entries } = await skills.list();
    const read = await Promise.all(entries.slice(0, max).map((entry) => skills.read(entry)));
    return read.map((file) => ({
      name: String(file.frontmatter?.name ?? ""),
      description: String(file.frontmatter?.description ?? ""),
      body: file.body ?? "",
    }));
  }

  /** A round trip that proves the transport and the server are alive; nothing else. */
  async ping(): Promise<void> {
    await (await this.connected()).ping();
  }

  /**
   * With `onProgress`, the call asks the server for progress reports and hands each one on, and
   * each restarts the timeout (`timeoutMs`, else the client library's 60 s). An aborted `signal`
   * ends the wait and sends the server `notifications/cancelled` (the SDK's).
   */
  async callTool(
    tool: string,
    args: Record<string, unknown>,
    caller: Caller,
    { onProgress, signal, timeoutMs }: SourceCall = {},
  ): Promise<CallToolResult> {
    // The request id a connection's gate records is not sent anywhere: a platform app's failures
    // are logged by the router with it, and a remote server never learns it.
    const client = await this.connected();
    const options =
      onProgress || signal || timeoutMs !== undefined
        ? {
            // A server that reports progress is working: each report restarts the timeout.
            ...(onProgress ? { onprogress: onProgress, resetTimeoutOnProgress: true } : {}),
            ...(signal ? { signal } : {}),
            ...(timeoutMs === undefined ? {} : { timeout: timeoutMs }),
          }
        : undefined;
    if (this.transport.kind === "streamable-http")
      return withRelayableMeta(await client.callTool({ name: tool, arguments: args }, options));
    // The in-memory arm skips callTool's client-side checks: the in-process McpServer has
    // already parsed its result against the era's CallToolResult schema (and any output
    // schema), and callTool would parse it again and look up an output validator in the
    // client's response cache on every call, which more than doubled the CPU an in-memory
    // call costs (docs/performance.md). A remote result is untrusted and keeps every check.
    return await client.request(
      { method: "tools/call", params: { name: tool, arguments: args, _meta: { [CALLER_META_KEY]: caller } } },
      VALIDATED_BY_SERVER,
      options,
    );
  }

  /**
   * Closes the client. `"now"` cuts a connect still under way rather than waiting for it: a server
   * that takes the TCP connection and never answers held an admin's disable or remove until
   * connections.requestTimeoutSeconds (test/integration/connections-races.test.ts "a disable behind
   * a refresh answers while the server never answers"). `"superseded"` lets it finish, and a later
   * `"now"` still cuts it.
   */
  async close(how: SourceClosing = "now"): Promise<void> {
    // Closed for good: a call that reaches this source afterwards (it took the source before a
    // swap, and the gate's own awaits came first) is refused, never given a client of its own that
    // nothing would close (test/integration/remote-client-close.test.ts "after its close").
    this.retired = true;
    await this.closeClient(how);
  }

  /**
   * Closes the client, cutting anything under way, and lets the next call connect afresh: what the
   * gate does when a transport broke, to look at the server again (gate.ts).
   */
  async reset(): Promise<void> {
    await this.closeClient("now");
  }

  private async closeClient(how: SourceClosing): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.tools = undefined;
    if (how === "now")
      this.cut?.abort(new OutboundFailure("The client was closed before the server answered."));
    if (client) await (await client.catch(() => undefined))?.close();
    await this.server?.close();
    this.server = undefined;
  }

  private connected(): Promise<Client> {
    if (this.retired) return Promise.reject(new SourceRetired(this.name));
    if (this.client) return this.client;
    // A connect that fails forgets itself only if it is still the source's: a reset may have cut
    // it while a newer connect took its place, which must stay reachable by a close.
    const connecting: Promise<Client> = this.connect().catch((error: unknown) => {
      if (this.client === connecting) this.client = undefined;
      throw error;
    });
    this.client = connecting;
    return connecting;
  }

  private async connect(): Promise<Client> {
    const client = new Client(
      { name: "atrium", version: ATRIUM_VERSION },
      // A remote server may speak 2026-07-28 or only a 2025 revision: `auto` probes with
      // server/discover and falls back to initialize. The in-memory pair serves only the 2025
      // era, so the probe there would be a wasted round trip (docs: shared/notes/sdk-v2.md).
      this.transport.kind === "streamable-http"
        ? {
            capabilities: {},
            versionNegotiation: { mode: "auto" },
            listMaxPages: MAX_LIST_PAGES,
            ...(this.transport.jsonSchemaValidator && {
              jsonSchemaValidator: this.transport.jsonSchemaValidator,
            }),
          }
        : { capabilities: {}, listMaxPages: MAX_LIST_PAGES },
    );
    client.setNotificationHandler("notifications/tools/list_changed", async () => {
      this.tools = undefined;
    });
    // A new cut for each connect: close("now") ends this one's requests (ConnectCut).
    const cut = new ConnectCut();
    this.cut = cut;
    try {
      await client.connect(await this.openTransport(cut));
    } finally {
      cut.settled();
    }
    if (this.transport.kind === "streamable-http" && this.transport.listMaxAgeMs !== undefined) {
      // A 2026-07-28 server says its tools changed only on a subscriptions/listen stream; a 2025
      // one refuses the request (its sessions send the notification unasked) and the age bound
      // remains. Not awaited: a server that never acknowledges must not hold up the first call.
      if (client.getServerCapabilities()?.tools?.listChanged) {
        void client.listen({ toolsListChanged: true }).catch(() => undefined);
      }
    }
    return client;
  }

  private async openTransport(cut: ConnectCut): Promise<Transport> {
    if (this.transport.kind === "in-memory") {
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      this.server = this.transport.createServer();
      await this.server.connect(serverSide);
      return clientSide;
    }
    return new StreamableHTTPClientTransport(this.transport.url, {
      // The transport follows a redirect within the origin itself by default (its redirectPolicy
      // 'same-origin'), sending the credential on; "error" hands every request to `fetch` as it
      // is, and a redirect fails there (guarded-fetch.ts RedirectRefused, adr/0155).
      requestInit: { headers: this.transport.headers ?? {}, redirect: "error" },
      fetch: cut.fetch(this.transport.fetch ?? fetch),
    });
  }
}

/**
 * Every page of the server's tools, fetched now: the client walks the pages itself (up to
 * MAX_LIST_PAGES), and its response cache is bypassed so a re-list sees what the server says today.
 */
async function listEveryPage(client: Client): Promise<Tool[]> {
  try {
    return (await client.listTools(undefined, { cacheMode: "bypass" })).tools;
  } catch (error) {
    if (error instanceof SdkError && error.code === SdkErrorCode.ListPaginationExceeded)
      throw new UnfinishedListing();
    throw error;
  }
}
