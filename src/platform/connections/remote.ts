import type { Clock } from "../../kernel/clock.ts";
import { guardedFetch } from "../../sources/guarded-fetch.ts";
import { McpSource } from "../../sources/mcp-source.ts";
import type { ConnectionSettings } from "./config.ts";
import type { ConnectionRecord } from "./model.ts";

/** Where a connection's sealed credential is opened; the credential store implements it. */
export interface CredentialVault {
  put(recordId: string, field: string, value: string): Promise<string>;
  open(id: string, recordId: string, field: string): Promise<string>;
  delete(id: string): Promise<void>;
}

/** The field a static credential is sealed under, bound into its ciphertext. */
export const STATIC_VALUE_FIELD = "auth.value";

/** How a connection's server is reached: every request guarded, timed, capped. */
export class RemoteServers {
  constructor(
    private readonly settings: ConnectionSettings,
    private readonly vault: CredentialVault,
    private readonly clock: Clock,
  ) {}

  /** The headers a request to the server carries: the sealed static credential, opened now. */
  async headers(record: ConnectionRecord): Promise<Record<string, string>> {
    if (record.auth.kind !== "static") return {};
    return {
      [record.auth.header]: await this.vault.open(record.auth.credential, record.id, STATIC_VALUE_FIELD),
    };
  }

  /**
   * A client of the server as `record` describes it. `onStatus` hears every HTTP status (a 401
   * wakes the credential check); `listMaxAgeMs` bounds how old its tool listing may get.
   */
  async source(
    record: ConnectionRecord,
    options: { onStatus?: (status: number) => void; listMaxAgeMs?: number } = {},
  ): Promise<McpSource> {
    return new McpSource(
      record.name,
      {
        kind: "streamable-http",
        url: new URL(record.url),
        headers: await this.headers(record),
        fetch: guardedFetch({
          allowPrivate: this.settings.allowPrivateAddresses,
          timeoutMs: this.settings.requestTimeoutMs,
          maxResponseBytes: this.settings.maxResponseBytes,
          ...(options.onStatus ? { onStatus: options.onStatus } : {}),
        }),
        ...(options.listMaxAgeMs === undefined ? {} : { listMaxAgeMs: options.listMaxAgeMs }),
      },
      this.clock,
    );
  }

  /**
   * Transport liveness without credentials: one JSON-RPC `ping` POSTed bare. Any HTTP answer
   * below 500 — a 401 or a 400 for a missing session included — means the server is there and
   * talking; a refused connection, a timeout or a 5xx means it is not.
   */
  async reachable(url: string): Promise<{ ok: boolean; detail?: string }> {
    const fetch = guardedFetch({
      allowPrivate: this.settings.allowPrivateAddresses,
      timeoutMs: this.settings.requestTimeoutMs,
      maxResponseBytes: 64 * 1024,
    });
    try {
      const response = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
      });
      await response.body?.cancel();
      return response.status < 500 ? { ok: true } : { ok: false, detail: `HTTP ${response.status}` };
    } catch (error) {
      return { ok: false, detail: (error as Error).message.slice(0, 200) };
    }
  }
}
