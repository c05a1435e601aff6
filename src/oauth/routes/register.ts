import { Hono } from "hono";
import type { Clock } from "../../kernel/clock.ts";
import type { Logger } from "../../log.ts";
import type { AppEnv } from "../../web/app-env.ts";
import type { ClientRegistry } from "../clients.ts";
import { OAuthError } from "../oauth-error.ts";
import { FixedWindowLimit } from "../rate-limit.ts";
import { publicCors } from "./cors.ts";
import { callerAddress, NO_STORE, oauthBodyLimit, oauthEndpoint, readJson } from "./oauth-http.ts";

const MAX_REGISTRATION_BYTES = 64 * 1024;
const HOUR_MS = 60 * 60 * 1000;
/**
 * When to try again once the instance holds all the unused clients it keeps: the next hourly
 * housekeeping is the earliest that room can be made (ADR 0156).
 */
const CAP_FULL_RETRY_AFTER_SECONDS = 60 * 60;

/** RFC 7591 dynamic client registration: open, as MCP clients expect; what it accepts is client-rules.ts. */
export function registerRoutes(deps: {
  clients: ClientRegistry;
  log: Logger;
  registrationsPerHour: number;
  clock?: Clock;
}): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const limit = new FixedWindowLimit(deps.registrationsPerHour, HOUR_MS, deps.clock);
  app.use("/oauth/register", publicCors());
  app.use("/oauth/register", oauthBodyLimit(MAX_REGISTRATION_BYTES));

  app.post(
    "/oauth/register",
    oauthEndpoint(deps.log, async (c) => {
      // Read first: a body that is not JSON is refused without counting, so it makes no window
      // (one per address, for anyone who can send garbage from many addresses).
      const metadata = await readJson(c);
      const wait = limit.take(callerAddress(c));
      if (wait > 0) {
        c.header("retry-after", String(wait));
        throw new OAuthError(
          "too_many_requests",
          `Too many client registrations from this address; try again in ${wait} s, or reuse the client you registered.`,
        );
      }
      const client = await deps.clients.register(metadata).catch((error: unknown) => {
        if (error instanceof OAuthError && error.errorCode === "temporarily_unavailable") {
          c.header("retry-after", String(CAP_FULL_RETRY_AFTER_SECONDS));
        }
        throw error;
      });
      deps.log.info(
        { clientId: client.client_id, method: client.token_endpoint_auth_method },
        "oauth client registered",
      );
      return c.json(client, 201, NO_STORE);
    }),
  );

  return app;
}
