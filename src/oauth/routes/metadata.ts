import { Hono } from "hono";
import { isWorkspaceId } from "../../ids.ts";
import type { AppEnv } from "../../web/app-env.ts";
import type { SigningKeys } from "../keys.ts";
import { authorizationServerMetadata, protectedResourceMetadata } from "../metadata.ts";
import { publicCors } from "./cors.ts";

const METADATA_CACHE = { "cache-control": "public, max-age=3600" };
// Short, so a client picks up a rotated key soon; a retired key stays listed meanwhile.
const JWKS_CACHE = { "cache-control": "public, max-age=300" };

/** The discovery documents and the public keys: what a client reads before it has a credential. */
export function metadataRoutes(deps: { keys: SigningKeys; publicUrl: () => string }): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.use("/.well-known/oauth-authorization-server", publicCors());
  app.use("/.well-known/oauth-protected-resource/mcp/:ws", publicCors());
  app.use("/oauth/jwks", publicCors());

  app.get("/.well-known/oauth-authorization-server", (c) =>
    c.json(authorizationServerMetadata(deps.publicUrl()), 200, METADATA_CACHE),
  );

  // The same document for every well-formed id, existing or not (test/integration/oauth-endpoints.test.ts).
  app.get("/.well-known/oauth-protected-resource/mcp/:ws", (c) => {
    const workspaceId = c.req.param("ws");
    if (!isWorkspaceId(workspaceId)) {
      // The OAuth error shape, like every other answer of these endpoints (docs/oauth.md).
      return c.json({ error: "not_found", error_description: "No protected resource at this address." }, 404);
    }
    return c.json(protectedResourceMetadata(deps.publicUrl(), workspaceId), 200, METADATA_CACHE);
  });

  app.get("/oauth/jwks", (c) => c.json(deps.keys.jwks(), 200, JWKS_CACHE));

  return app;
}
