import type { Principal } from "../identity/principal.ts";
import { html, page, type SafeHtml } from "../web/html.ts";

// The sign-in pages. Each is a whole page from page(): escaped, no scripts, no remote assets.

const LOGOUT_PATH = "/auth/logout";

function loginHref(returnTo: string): string {
  return returnTo === "/" ? "/auth/login" : `/auth/login?return_to=${encodeURIComponent(returnTo)}`;
}

function who(principal: Principal): SafeHtml {
  return principal.email === null
    ? html`<strong>${principal.displayName}</strong>`
    : html`<strong>${principal.displayName}</strong> (${principal.email})`;
}

const signOutForm = html`<form method="post" action="${LOGOUT_PATH}" class="actions">
<button type="submit" class="primary">Sign out</button>
</form>`;

/** A workspace as the home page lists it: its name, the one URL an MCP client needs, and a way out. */
export interface HomeWorkspace {
  id: string;
  name: string;
  mcpUrl: string;
}

/** A pending invitation as its invitee sees it: the workspace's name and nothing else of it. */
export interface HomeInvitation {
  id: string;
  workspaceName: string;
  role: string;
  invitedBy: string;
  expiresAt: string;
}

/**
 * A name from elsewhere (a workspace's, an inviter's) in the page's own sentences: a `<bdi>`
 * keeps any direction it sets (right-to-left letters) from reordering the text around it, as
 * the consent page does. The workspace-name check refuses bidi controls; a display name comes
 * from the identity provider.
 */
function isolated(text: string): SafeHtml {
  return html`<bdi>${text}</bdi>`;
}

function invitationList(invitations: HomeInvitation[]): SafeHtml | string {
  if (invitations.length === 0) return "";
  return html`<h2>Invitations</h2>
<p class="note">You become a member only if you accept. Until then the workspace shows you nothing but its name.</p>
<dl>${invitations.map(
    (inv) => html`<dt>${isolated(inv.workspaceName)}</dt>
<dd>${isolated(inv.invitedBy)} invites you as ${inv.role}; the invitation ends ${inv.expiresAt.slice(0, 10)}.
<form method="post" action="/invitations/${inv.id}" class="actions">
<button type="submit" name="decision" value="accept" class="primary">Accept</button>
<button type="submit" name="decision" value="decline">Decline</button>
</form></dd>`,
  )}</dl>`;
}

export function homePage(
  principal: Principal | undefined,
  workspaces: HomeWorkspace[] = [],
  invitations: HomeInvitation[] = [],
): Response {
  if (!principal) {
    return page(
      "Atrium",
      html`<p>You are not signed in.</p>
<p class="actions"><a class="button" href="/auth/login">Sign in</a></p>`,
    );
  }
  const list =
    workspaces.length === 0
      ? html`<p>You are not a member of any workspace yet. <code>GET /v1/bootstrap</code> creates your first one.</p>`
      : html`<h2>Your workspaces</h2>
<p class="note">Point an MCP client at a workspace's URL; it will ask you to allow it here.</p>
<dl>${workspaces.map(
          (ws) => html`<dt>${isolated(ws.name)}</dt><dd><code>${ws.mcpUrl}</code>
<form method="post" action="/workspaces/${ws.id}/leave"><button type="submit">Leave</button></form></dd>`,
        )}</dl>`;
  return page(
    "Atrium",
    html`<p>Signed in as ${who(principal)}.</p>${invitationList(invitations)}${list}${signOutForm}`,
  );
}

/** What a home-page action (accept, decline, leave) could not do, with the way back. */
export function homeActionPage(title: string, message: string, status: number): Response {
  return page(
    title,
    html`<p>${message}</p>
<p class="actions"><a class="button" href="/">Back to your workspaces</a></p>`,
    status,
  );
}

export function signOutPage(principal: Principal | undefined): Response {
  if (!principal) {
    return page(
      "Sign out",
      html`<p>You are not signed in.</p>
<p class="actions"><a class="button" href="/auth/login">Sign in</a></p>`,
    );
  }
  return page(
    "Sign out",
    html`<p>Signed in as ${who(principal)}.</p>
<p>Signing out ends this browser's session here. It does not sign you out of your identity provider.</p>
${signOutForm}`,
  );
}

export function signedOutPage(): Response {
  return page(
    "Signed out",
    html`<p>You are signed out of Atrium in this browser.</p>
<p class="actions"><a class="button" href="/auth/login">Sign in again</a></p>`,
  );
}

export function signInErrorPage(
  title: string,
  message: string,
  status: number,
  returnTo = "/",
  detail?: string,
): Response {
  return page(
    title,
    html`<p>${message}</p>
${detail === undefined ? "" : html`<p class="note">${detail}</p>`}
<p class="actions"><a class="button" href="${loginHref(returnTo)}">Try signing in again</a></p>`,
    status,
  );
}

export function deactivatedPage(principal: Principal): Response {
  return page(
    "Account deactivated",
    html`<p>${who(principal)} has been deactivated by an org admin of this Atrium, so you cannot use it.</p>
<p>If you think this is a mistake, ask one of your org admins to reactivate you.</p>`,
    403,
  );
}

export function noProviderCallbackPage(): Response {
  return page(
    "Nothing to finish",
    html`<p>This Atrium uses the <code>dev</code> identity provider: signing in needs no provider.</p>
<p class="actions"><a class="button" href="/auth/login">Sign in</a></p>`,
    404,
  );
}
