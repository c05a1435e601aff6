import { SdkErrorCode, type VersionNegotiationOptions } from "@modelcontextprotocol/client";

/** The protocol revisions a test client can speak to a workspace URL. */
export type McpEra = "2025-11-25" | "2026-07-28";

/** The eras Atrium serves, and so the eras every per-era suite runs in (describe.each over this list). */
export const MCP_ERAS = ["2025-11-25", "2026-07-28"] as const satisfies readonly McpEra[];

/** The era the test helpers' clients speak when a test does not say. */
export const DEFAULT_MCP_ERA: McpEra = "2025-11-25";

/**
 * How the v2 Client reaches `era`: 2025-11-25 is its `legacy` mode (the `initialize` handshake
 * offering its LATEST_PROTOCOL_VERSION, 2025-11-25); 2026-07-28 is a pin, which probes with
 * `server/discover` and fails loudly instead of falling back when the server does not offer it.
 */
export function versionNegotiationFor(era: McpEra): VersionNegotiationOptions {
  return era === "2026-07-28" ? { mode: { pin: era } } : { mode: "legacy" };
}

/**
 * What the v2 Client's `connect()` rejects with, in `era`, when the workspace URL refuses the
 * caller with HTTP `status` (a 4xx other than 401 and 403, e.g. the wall's 404). In 2025-11-25 the
 * `initialize` POST fails with SdkHttpError carrying the status. In 2026-07-28 the pinned
 * `server/discover` probe meets it first, and SDK 2.4.0 reads such a status with a body that is
 * not JSON-RPC as "not a 2026 server" (classifyHttpError), so a pin fails with
 * EraNegotiationFailed and no status: a test that needs the status in that era checks a raw POST.
 */
export function refusedConnect(era: McpEra, status: number): Record<string, unknown> {
  if (era === "2026-07-28") return { name: "SdkError", code: SdkErrorCode.EraNegotiationFailed };
  return { name: "SdkHttpError", status };
}
