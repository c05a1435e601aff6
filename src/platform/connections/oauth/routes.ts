import { type Context, Hono } from "hono";
import { readCookie, setCookie } from "../../../identity/session-cookie.ts";
import type { AppEnv } from "../../../web/app-env.ts";
import { html, page } from "../../../web/html.ts";
import type { Authorizer } from "./authorizer.ts";
import { clientMetadata } from "./client-identity.ts";
import type { FlowOutcome } from "./flow-outcomes.ts";
import { FLOW_TTL_MS } from "./flows.ts";
import {
  bindingCookieName,
  CLIENT_METADATA_PATH,
  OAUTH_CALLBACK_PATH,
  OAUTH_GO_PATH,
  OAUTH_ISSUER_CALLBACK_PATH,
  oauthPaths,
} from "./paths.ts";

/**
 * The instance-level routes of connection authorization: the go_url (binds the flow to this
 * browser, then off to the authorization server), the callback, and Atrium's client ID metadata
 * document. The first two are under /v1, so the person is authenticated; the document is not,
 * since an authorization server fetches it with no credential.
 */
export function oauthRoutes(authorizer: Authorizer, publicUrl: () => string): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.get(OAUTH_GO_PATH, (c) => {
    const flowId = c.req.param("flow");
    const { secure } = oauthPaths(publicUrl());
    const cookie = bindingCookieName(flowId, secure);
    const opened = authorizer.open(flowId, c.get("principal").id, readCookie(c.req.raw, cookie));
    if ("status" in opened) return outcomePage(opened);
    const headers = new Headers({ location: opened.redirect, "cache-control": "no-store" });
    if (opened.setSecret) {
      headers.append(
        "set-cookie",
        setCookie(cookie, opened.setSecret, { path: "/", maxAgeSeconds: FLOW_TTL_MS / 1000, secure }),
      );
    }
    return new Response(null, { status: 302, headers });
  });

  // The shared callback and each issuer's own (ADR 0077): the flow says which it expects.
  const callback = async (c: Context<AppEnv>, issuer: string | undefined) => {
    const query = c.req.query();
    const flow = authorizer.flowOf(query.state);
    const paths = oauthPaths(publicUrl());
    const { secure } = paths;
    const cookie = flow ? bindingCookieName(flow.id, secure) : undefined;
    const outcome = await authorizer.complete(
      {
        ...(query.state === undefined ? {} : { state: query.state }),
        ...(query.code === undefined ? {} : { code: query.code }),
        ...(query.iss === undefined ? {} : { iss: query.iss }),
        ...(query.error === undefined ? {} : { error: query.error }),
      },
      issuer === undefined ? paths.callback : paths.issuerCallback(issuer),
      c.get("principal").id,
      cookie ? readCookie(c.req.raw, cookie) : undefined,
    );
    const response = outcomePage(outcome);
    // The flow is spent once the browser's callback got past the binding and opener checks: its
    // cookie goes, a refusal at the activation's commit (a 403 with the flow spent) included.
    if (cookie && (outcome.status !== 403 || authorizer.flowOf(query.state) === undefined)) {
      response.headers.append("set-cookie", setCookie(cookie, "", { path: "/", maxAgeSeconds: 0, secure }));
    }
    return response;
  };
  app.get(OAUTH_CALLBACK_PATH, (c) => callback(c, undefined));
  app.get(OAUTH_ISSUER_CALLBACK_PATH, (c) => callback(c, c.req.param("issuer")));

  app.get(CLIENT_METADATA_PATH, (c) => {
    const paths = oauthPaths(publicUrl());
    if (!paths.metadataDocument) {
      return c.json(
        {
          error: "not_found",
          message:
            "Atrium serves its client ID metadata document only at a public https URL that is not loopback.",
        },
        404,
      );
    }
    return c.json(clientMetadata(paths.callback, { clientId: paths.metadataDocument }), 200, {
      "cache-control": "public, max-age=3600",
    });
  });

  return app;
}

function outcomePage(outcome: FlowOutcome): Response {
  return page(outcome.title, html`<p>${outcome.message}</p>`, outcome.status);
}
