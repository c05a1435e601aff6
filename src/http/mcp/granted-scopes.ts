import { InsufficientScope } from "../../errors.ts";
import { resourceMetadataUrl } from "../../oauth/metadata.ts";
import type { RouteDeps } from "../context.ts";
import type { McpCaller } from "../middleware/authenticate.ts";
import { requiredScopes, scopedCalls } from "./required-scopes.ts";

/**
 * Refuses a body that needs a scope the caller's access token was not granted, with the 403 a
 * client steps up from. A caller without a token (a provider's, or `dev`) has no grant to check.
 * Each tool call refused so is told to the dispatch's denial listeners, as a refusal inside the
 * dispatch is (the connections' audit ledger records it, `deniedBy: "scope"`). The hono route
 * and the MCP front door (http/mcp-front-door.ts) both call this.
 */
export async function checkGrantedScopes(
  deps: Pick<RouteDeps, "registries" | "router" | "publicUrl" | "dispatch">,
  workspaceId: string,
  caller: McpCaller,
  body: unknown,
  requestId: string,
): Promise<void> {
  const grant = caller.grant;
  if (!grant) return;
  const calls = await scopedCalls(body, (name) =>
    deps.registries.use(workspaceId, (registry) => deps.router.findTool(registry, caller.principal.id, name)),
  );
  const required = requiredScopes(calls);
  const missing = required.filter((scope) => !grant.scopes.includes(scope));
  if (missing.length === 0) return;
  const toolCaller = { principalId: caller.principal.id, workspaceId, scopes: grant.scopes };
  for (const call of calls) {
    if (!grant.scopes.includes(call.scope)) {
      await deps.dispatch.recordDenied({ caller: toolCaller, tool: call.tool, by: "scope", requestId });
    }
  }
  // RFC 6750 §3.1 and the MCP step-up rule: name what was granted plus what is needed.
  const scope = [...new Set([...grant.scopes, ...required])].join(" ");
  throw new InsufficientScope(
    `This call needs the ${missing.join(" and ")} scope, which this token was not granted; authorize again asking for it.`,
    `Bearer error="insufficient_scope", scope="${scope}", resource_metadata="${resourceMetadataUrl(deps.publicUrl(), workspaceId)}"`,
  );
}
