import { InsufficientScope } from "../../errors.ts";
import { resourceMetadataUrl } from "../../oauth/metadata.ts";
import type { RouteDeps } from "../context.ts";
import type { McpCaller } from "../middleware/authenticate.ts";
import { requiredScopes } from "./required-scopes.ts";

/**
 * Refuses a body that needs a scope the caller's access token was not granted, with the 403 a
 * client steps up from. A caller without a token (a provider's, or `dev`) has no grant to check.
 * The hono route and the MCP front door (http/mcp-front-door.ts) both call this.
 */
export async function checkGrantedScopes(
  deps: Pick<RouteDeps, "registries" | "router" | "publicUrl">,
  workspaceId: string,
  caller: McpCaller,
  body: unknown,
): Promise<void> {
  const grant = caller.grant;
  if (!grant) return;
  const required = await requiredScopes(body, (name) =>
    deps.registries.use(workspaceId, (registry) => deps.router.findTool(registry, caller.principal.id, name)),
  );
  const missing = required.filter((scope) => !grant.scopes.includes(scope));
  if (missing.length === 0) return;
  // RFC 6750 §3.1 and the MCP step-up rule: name what was granted plus what is needed.
  const scope = [...new Set([...grant.scopes, ...required])].join(" ");
  throw new InsufficientScope(
    `This call needs the ${missing.join(" and ")} scope, which this token was not granted; authorize again asking for it.`,
    `Bearer error="insufficient_scope", scope="${scope}", resource_metadata="${resourceMetadataUrl(deps.publicUrl(), workspaceId)}"`,
  );
}
