import { extractWWWAuthenticateParams } from "@modelcontextprotocol/client";
import { joinToolName } from "../../../sources/tool-names.ts";
import { NotAuthorized } from "./connection-tokens.ts";
import { reauthorizer } from "./record-home.ts";

/**
 * What a step-up answers: a new re-authorization's go_url, or the pending one's handed out again.
 * `waiting` is set when the pending one asks for less than this call needs (its `scope`): it is
 * never replaced, since an admin may be completing it (ADR 0122, amended 2026-12-07), so it must
 * be finished first, and the call made again then starts one for the rest.
 */
export type StepUpLink = { go_url: string; waiting?: { scope: string | undefined } } | OpenedElsewhere;

/**
 * The pending step-up was already opened, so its go_url answers any other browser 403: instead of
 * that link, until when it waits and where a sign-in of one's own starts (`start`, for `scopes`,
 * what this call needs), which is not the step-up's slot and so is never refused for it.
 */
export interface OpenedElsewhere {
  openedElsewhere: { expiresAt: string; start: string; scopes: string[] };
}

/**
 * The server refused a call for want of scope (403 `insufficient_scope`): a re-authorization
 * asking for more was started (or one already waits), and the call answers with what a workspace
 * admin (for a personal connection, its owner, the only one who may open the go_url) must do. The
 * SDK would refresh instead, which cannot widen a grant (RFC 6749 §6); Atrium never does that.
 */
export class StepUpRequired extends Error {
  constructor(
    readonly connection: string,
    readonly scope: string | undefined,
    link: StepUpLink,
    owner?: string,
  ) {
    super(
      `The server of connection "${connection}" needs more access${scope ? ` (scope "${scope}")` : ""} than it was granted; ` +
        whatToDo(link, owner),
    );
    this.name = "StepUpRequired";
  }
}

function whatToDo(link: StepUpLink, owner: string | undefined): string {
  const who = reauthorizer({ owner });
  if ("openedElsewhere" in link) {
    const { expiresAt, start, scopes } = link.openedElsewhere;
    const body = scopes.length ? ` with {"scopes":${JSON.stringify(scopes)}}` : "";
    return (
      `a re-authorization of it was already opened in a browser and is being completed there, until ${expiresAt} at the latest; ` +
      `its link opens in no other browser. ${owner === undefined ? "A workspace admin" : "Its owner"} can start a sign-in of their own for what this call needs: ` +
      `POST ${start}${body} (${joinToolName("connections", "authorize")} over MCP); or wait for that one to finish or expire, then make this call again`
    );
  }
  const onlyOwner = owner === undefined ? "" : " (only the owner can open this link)";
  if (!link.waiting) return `${who} must re-authorize it${onlyOwner}: open ${link.go_url}`;
  const asked = link.waiting.scope ? `scope "${link.waiting.scope}"` : "no particular scope";
  return (
    `a re-authorization asking for ${asked}, not all of it, is already waiting and is not replaced: ` +
    `${who} must finish it first${onlyOwner}: open ${link.go_url} — then make this call again to start one for the rest`
  );
}

/**
 * The server refused a call for want of scope, but the scopes a step-up would ask for fail the
 * rules an admin's own are held to (`checkScopes`: at most 50, each an RFC 6749 scope token): no
 * flow is started, since its scopes would become the connection's and every later
 * re-authorization would ask for them. What the server wrote is not repeated (ADR 0067).
 */
export class StepUpRefused extends Error {
  constructor(readonly connection: string) {
    super(
      `The server of connection "${connection}" needs more access than it was granted, but asks for scopes Atrium will not request ` +
        "(more than 50, or not OAuth scope tokens); no re-authorization was started. Ask the server's operator, or re-authorize with scopes of your own.",
    );
    this.name = "StepUpRefused";
  }
}

/** The scope a 403 asks for when it is an `insufficient_scope` challenge; `null` when it is not one. */
export function insufficientScope(response: Response): { scope: string | undefined } | null {
  if (response.status !== 403) return null;
  const params = extractWWWAuthenticateParams(response);
  return params.error === "insufficient_scope" ? { scope: params.scope } : null;
}

/**
 * Why a call cannot go until someone authorizes the connection (a step-up, one refused, a refused
 * refresh, no tokens yet), found anywhere in the error's cause chain (the transport may wrap what fetch threw).
 */
export function reauthorizationIn(
  error: unknown,
): StepUpRequired | StepUpRefused | NotAuthorized | undefined {
  for (let at = error, depth = 0; at instanceof Error && depth < 5; at = at.cause, depth += 1) {
    if (at instanceof StepUpRequired || at instanceof StepUpRefused || at instanceof NotAuthorized) return at;
  }
  return undefined;
}
