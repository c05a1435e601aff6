// The MCP revisions /mcp/ws_… speaks (adr/0007-mcp-serves-2025-11-25-and-accepts-2025-06-18-statelessly.md). The newest is
// served; the one before it is accepted when a client asks for it.
export const SERVED_PROTOCOL_VERSION = "2025-11-25";
export const ACCEPTED_PROTOCOL_VERSIONS: readonly string[] = [SERVED_PROTOCOL_VERSION, "2025-06-18"];
