import { spelledOut, wellFormed } from "../../text.ts";
import { html, page, type SafeHtml } from "../../web/html.ts";
import { MAX_CLIENT_NAME_CHARS } from "../client-rules.ts";
import { SCOPE_OFFLINE, SCOPE_READ, SCOPE_WRITE } from "../scopes.ts";

const SCOPE_TEXT: Record<string, string> = {
  [SCOPE_READ]: "See this workspace's tools, skills and resources, and use the tools that only read.",
  [SCOPE_WRITE]: "Use the tools that change things in this workspace: write and delete files, edit skills.",
  [SCOPE_OFFLINE]: "Stay connected without asking you again, until you sign out of the application.",
};

export interface ConsentView {
  requestId: string;
  clientName: string;
  clientId: string;
  /** Where the browser goes with the code, in words (describeRedirectUri). */
  redirectTarget: string;
  workspaceName: string;
  personName: string;
  scopes: string[];
}

/** Names the client, the workspace, the person and each scope, and asks for a decision. */
export function consentPage(view: ConsentView): Response {
  const clientName = shownName(view.clientName);
  return page(
    "Allow access to your workspace?",
    html`<p><strong>${isolated(clientName)}</strong> wants to use the workspace
<strong>${isolated(view.workspaceName)}</strong> as <strong>${isolated(view.personName)}</strong>.</p>
<dl>
<dt>Application</dt><dd>${isolated(clientName)} <span class="note">(client ${isolated(view.clientId)})</span></dd>
<dt>It will be sent back to</dt><dd>${view.redirectTarget}</dd>
<dt>It asks to</dt>
<dd><ul>${view.scopes.map((scope) => html`<li><code>${scope}</code>: ${SCOPE_TEXT[scope] ?? scope}</li>`)}</ul></dd>
</dl>
<form method="post" action="/oauth/authorize">
<input type="hidden" name="request" value="${view.requestId}">
<div class="actions">
<button type="submit" name="decision" value="approve" class="primary">Allow</button>
<button type="submit" name="decision" value="deny">Deny</button>
</div>
</form>
<p class="note">Only allow applications you trust. Access lasts until you take it back (<code>/v1/oauth/grants</code>) or leave the workspace.</p>`,
  );
}

/**
 * Text from elsewhere (a client, a workspace, a person) in the page's own sentences: a
 * `<bdi>` keeps any direction it sets from reordering the text around it. Registration
 * refuses bidi controls in a client's name (client-rules.ts); this is for everything else.
 */
function isolated(text: string): SafeHtml {
  return html`<bdi>${text}</bdi>`;
}

/** A client's name cut to what registration allows, for a client stored before the cap. */
function shownName(name: string): string {
  return name.length <= MAX_CLIENT_NAME_CHARS ? name : `${wellFormed(name.slice(0, MAX_CLIENT_NAME_CHARS))}…`;
}

/** A way back to the application that the person follows or not: where it goes, and its link. */
export interface WayBack {
  href: string;
  /** describeRedirectUri of it: the host, or the app that opens its scheme. */
  target: string;
}

/**
 * A problem the person must see: it cannot go back to the application, or goes back only when the
 * person follows the link, told where it leads (adr/0126).
 */
export function problemPage(status: number, message: string, back?: WayBack): Response {
  return page(
    "This authorization request cannot continue",
    html`<p role="alert">${spelledOut(message)}</p>
${back ? html`<p><a class="button" href="${back.href}">Return to the application</a></p><p>The link goes to ${isolated(back.target)}.</p>` : ""}`,
    status,
  );
}
