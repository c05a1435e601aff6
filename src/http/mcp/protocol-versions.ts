// The MCP revisions /mcp/ws_… speaks (adr/0029-…). The 2026-07-28 era is stateless by design and
// served to every request that carries its per-request envelope; the 2025 era is served statelessly
// in each revision the SDK serves it, its newest to any client that asks for another one.
export const MODERN_PROTOCOL_VERSION = "2026-07-28";
export const LEGACY_PROTOCOL_VERSION = "2025-11-25";
export const LEGACY_PROTOCOL_VERSIONS: readonly string[] = [
  LEGACY_PROTOCOL_VERSION,
  "2025-06-18",
  "2025-03-26",
];
export const SERVED_PROTOCOL_VERSIONS: readonly string[] = [
  MODERN_PROTOCOL_VERSION,
  ...LEGACY_PROTOCOL_VERSIONS,
];
