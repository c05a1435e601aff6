import { type Context, Hono } from "hono";
import { AtriumError } from "../../errors.ts";
import type { Principal } from "../../identity/principal.ts";
import type { Sessions } from "../../identity/sessions.ts";
import { deactivatedPage, homeActionPage } from "../../signin/pages.ts";
import type { AppEnv } from "../../web/app-env.ts";
import { checkCookieOrigin } from "../../web/cookie-origin.ts";
import { PAGE_FORM_REFUSAL, readPageForm } from "../../web/page-form.ts";
import { admit } from "../../workspace/gate.ts";
import type { RouteDeps } from "../context.ts";
import { accept, decline } from "./invitations.ts";
import { type GrantRevoker, removeMember } from "./members.ts";

/**
 * The home page's buttons: accept or decline an invitation, leave a workspace. Each is a
 * form post with the browser's session, from Atrium's own origin, doing exactly what its
 * REST twin does, then back to `/` (303), or a page that says why not.
 */
export function homeActionRoutes(
  deps: RouteDeps,
  sessions: Pick<Sessions, "lookup">,
  grants: GrantRevoker,
): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.post("/invitations/:id", async (c) => {
    const form = await readPageForm(c);
    if (form === undefined) return homeActionPage("Nothing done", PAGE_FORM_REFUSAL, 415);
    const decision = form.get("decision");
    if (decision !== "accept" && decision !== "decline") {
      return homeActionPage("Nothing done", "The form must say accept or decline.", 400);
    }
    return act(c, async (person) => {
      if (decision === "accept") await accept(deps, person.id, c.req.param("id"));
      else await decline(deps, person.id, c.req.param("id"));
    });
  });

  app.post("/workspaces/:ws/leave", (c) =>
    act(c, async (person) => {
      const { workspace } = admit(deps.workspaces, person, c.req.param("ws"));
      await removeMember(deps, grants, workspace.id, person.id, person.id);
    }),
  );

  return app;

  async function act(c: Context<AppEnv>, work: (person: Principal) => Promise<void>): Promise<Response> {
    checkCookieOrigin(c.req.raw, deps.publicUrl());
    const session = await sessions.lookup(c.req.raw);
    if (session.kind !== "signed-in") {
      return homeActionPage("Not signed in", "Sign in first, then try again from your home page.", 401);
    }
    if (deps.users.isDeactivated(session.principal.id)) return deactivatedPage(session.principal);
    try {
      await work(session.principal);
    } catch (error) {
      if (!(error instanceof AtriumError)) throw error;
      return homeActionPage("Nothing done", error.message, error.status);
    }
    return c.redirect("/", 303);
  }
}
