import { html, page } from "../../web/html.ts";
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
  return page(
    "Allow access to your workspace?",
    html`<p><strong>${view.clientName}</strong> wants to use the workspace
<strong>${view.workspaceName}</strong> as <strong>${view.personName}</strong>.</p>
<dl>
<dt>Application</dt><dd>${view.clientName} <span class="note">(client ${view.clientId})</span></dd>
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

/** A problem the person must see because it cannot safely go back to the application. */
export function problemPage(status: number, message: string, back?: string): Response {
  return page(
    "This authorization request cannot continue",
    html`<p role="alert">${message}</p>
${back ? html`<p><a class="button" href="${back}">Return to the application</a></p>` : ""}`,
    status,
  );
}
