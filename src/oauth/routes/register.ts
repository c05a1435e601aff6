import { Hono } from "hono";
import type { AppEnv } from "../../http/context.ts";
import type { Logger } from "../../log.ts";
import type { ClientRegistry } from "../clients.ts";
import { publicCors } from "./cors.ts";
import { NO_STORE, oauthBodyLimit, oauthEndpoint, readJson } from "./oauth-http.ts";

const MAX_REGISTRATION_BYTES = 64 * 1024;

/** RFC 7591 dynamic client registration: open, as MCP clients expect; what it accepts is client-rules.ts. */
export function registerRoutes(deps: { clients: ClientRegistry; log: Logger }): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.use("/oauth/register", publicCors());
  app.use("/oauth/register", oauthBodyLimit(MAX_REGISTRATION_BYTES));

  app.post(
    "/oauth/register",
    oauthEndpoint(deps.log, async (c) => {
      const client = await deps.clients.register(await readJson(c));
      deps.log.info(
        { clientId: client.client_id, method: client.token_endpoint_auth_method },
        "oauth client registered",
      );
      return c.json(client, 201, NO_STORE);
    }),
  );

  return app;
}
