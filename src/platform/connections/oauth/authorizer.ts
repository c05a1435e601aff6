import { computeScopeUnion, type FetchLike } from "@modelcontextprotocol/client";
import { InvalidInput } from "../../../errors.ts";
import type { Clock } from "../../../kernel/clock.ts";
import type { ExclusiveLeases } from "../../../kernel/leases.ts";
import type { Logger } from "../../../log.ts";
import { joinToolName } from "../../../sources/tool-names.ts";
import { type ConnectionRecord, checkScopes } from "../model.ts";
import { retold } from "../remote-failure.ts";
import { isStopping } from "../server-looks.ts";
import { activate, Superseded } from "./activation.ts";
import { Authorities } from "./authorities.ts";
import type { ClientRegistrations, ConfiguredClient, IssuedTo, OAuthClient } from "./client-identity.ts";
import { type ConnectionTokens, oauthOf } from "./connection-tokens.ts";
import { type CredentialExchanges, RootLetGo } from "./credential-exchanges.ts";
import { type AuthorizationTarget, discoverAuthorization } from "./discovery.ts";
import {
  expiredOutcome,
  type FlowOutcome,
  refusedOutcome,
  replacedOutcome,
  stoppingOutcome,
  usedOutcome,
} from "./flow-outcomes.ts";
import { type Flow, OAuthFlows } from "./flows.ts";
import {
  OpenerStandingLost,
  openerStanding,
  type StandingDeps,
  standingLostOutcome,
  whyNotOpener,
} from "./opener-standing.ts";
import { oauthPaths } from "./paths.ts";
import type { ConnectionStores } from "./record-home.ts";
import { type StepUpLink, StepUpRefused } from "./step-up.ts";
import {
  beginAuthorization,
  checkResponseIssuer,
  redeemCode,
  scopeToRequest,
  type TokenSet,
  WrongIssuer,
} from "./tokens.ts";
import { type ConnectionLooks, looksAt, untilStop } from "./until-stop.ts";

export interface AuthorizerDeps {
  stores: ConnectionStores;
  tokens: ConnectionTokens;
  leases: ExclusiveLeases;
  clock: Clock;
  log: Logger;
  publicUrl: () => string;
  fetch: FetchLike;
  configured: readonly ConfiguredClient[];
  registrations: ClientRegistrations;
  /** Where the callback's code exchange runs as one under way, which a graceful stop waits for. */
  exchanges: CredentialExchanges;
  /** What a graceful stop ends: each step here that asks a remote server is one of their looks. */
  looks: ConnectionLooks;
  /**
   * Workspaces and people as the gate knows them, in memory: a person's role is read at every
   * go_url and callback, and their standing again at the activation's commit (opener-standing.ts).
   */
  workspaces: StandingDeps["workspaces"];
  users: StandingDeps["users"];
  /** After an activation: photograph a pending connection, serve the new tokens, announce. */
  activated(record: ConnectionRecord): Promise<void>;
}

/** What a go_url is, as answered by add, start and a step-up. */
export interface GoLink {
  go_url: string;
  expiresAt: string;
}

/**
 * Authorizations of OAuth connections: a flow starts (add, start, or a step-up), a browser opens
 * its go_url and is bound to it, the callback checks everything and activates the new tokens by
 * compare-and-swap, so only one authorization of those started from one state wins.
 */
export class Authorizer {
  private readonly flows: OAuthFlows;
  private readonly authorities: Authorities;

  constructor(private readonly deps: AuthorizerDeps) {
    this.flows = new OAuthFlows(deps.clock);
    this.authorities = new Authorities({ ...deps, remembers: (record) => deps.tokens.remembers(record) });
  }

  /**
   * Discovery for a new connection, before anything is stored: a server that cannot be authorized
   * is refused now. `signal` (the add's look) cuts its requests.
   */
  discover(url: string, signal?: AbortSignal): Promise<AuthorizationTarget> {
    return discoverAuthorization(url, this.deps.fetch, signal ? { signal } : {});
  }

  /** Where `record`'s tokens come from, and who Atrium is there (Authorities.authority). */
  authority(
    record: ConnectionRecord,
    issuedTo?: IssuedTo,
    signal?: AbortSignal,
  ): Promise<{ target: AuthorizationTarget; client: OAuthClient }> {
    return this.authorities.authority(record, issuedTo, signal);
  }

  /** A removed connection: nothing about it is kept in memory, its tokens least of all, nor its flows. */
  forget(record: ConnectionRecord): void {
    this.flows.forgetConnection(record.id);
    this.authorities.forget(record);
    this.deps.tokens.forget(record);
  }

  /**
   * A new flow for `record`; `startedBy` absent for a step-up (any workspace admin may open it). A
   * personal connection's flow carries its owner, who alone may open it. Its discovery and client
   * registration are a look that a graceful stop ends (409 `stopping`): an add's, whose `signal`
   * it is given, else one of its own.
   */
  start(
    record: ConnectionRecord,
    request: { startedBy?: string; scopes?: string[]; target?: AuthorizationTarget; signal?: AbortSignal },
  ): Promise<GoLink> {
    const { signal } = request;
    if (signal) return this.startWithin(record, request, signal);
    const what = "the sign-in's discovery of the authorization server and client registration there";
    return untilStop(looksAt(this.deps.looks, record), what, (own) => this.startWithin(record, request, own));
  }

  private async startWithin(
    record: ConnectionRecord,
    request: { startedBy?: string; scopes?: string[]; target?: AuthorizationTarget },
    signal: AbortSignal,
  ): Promise<GoLink> {
    const auth = oauthOf(record);
    const { target, client } = request.target
      ? { target: request.target, client: await this.authorities.clientAt(request.target, signal) }
      : await this.authority(record, undefined, signal);
    const scopes = request.scopes ?? auth.scopes;
    const scope = scopeToRequest(target, scopes);
    if (!scopes?.length && scope !== undefined) checkDefaultScope(scope);
    // A step that ignored the signal (a stored registration read) may have outlived the look: no
    // flow is made for it then, and the start answers 409 stopping (until-stop.ts).
    signal.throwIfAborted();
    const state = OAuthFlows.newState();
    const redirectUri = this.authorities.redirectUriAt(target);
    const { authorizationUrl, codeVerifier } = await beginAuthorization(target, client, {
      redirectUri,
      state,
      ...(scope ? { scope } : {}),
    });
    const flow = this.flows.create({
      state,
      workspaceId: record.workspaceId,
      name: record.name,
      connectionId: record.id,
      ...(record.owner === undefined ? {} : { owner: record.owner }),
      ...(request.startedBy ? { startedBy: request.startedBy } : {}),
      generation: record.authorizationGeneration,
      activatedAt: auth.activatedAt,
      ...(scope ? { scope } : {}),
      codeVerifier,
      redirectUri,
      authorizationUrl: authorizationUrl.href,
      target,
      client,
    });
    return this.link(flow);
  }

  /**
   * The server answered 403 insufficient_scope: a re-authorization asking for what was granted
   * and what it requires, handed out again while unused rather than one per call. A step-up
   * already pending for other scopes is handed out too, said to be waiting (`StepUpLink`), never
   * replaced: an admin may be completing it. Once it activates, the next 403 starts one from
   * what it granted (test/integration/connections-oauth-step-up-pending.test.ts). One already
   * opened is not handed out, its go_url opening in that browser alone: the call is told where a
   * sign-in of one's own starts instead (test/integration/connections-oauth-step-up-opened.test.ts).
   */
  async stepUp(record: ConnectionRecord, required: string | undefined): Promise<StepUpLink> {
    const auth = oauthOf(record);
    const union = computeScopeUnion((auth.granted ?? auth.scopes).join(" "), required);
    const scopes = union ? union.split(" ").filter(Boolean) : [];
    // The server's challenge is held to the rules an admin's scopes are: they become the
    // connection's (activation.ts) and every later …/oauth/start asks for them
    // (test/integration/connections-oauth-hostile.test.ts "80 scopes").
    try {
      checkScopes(scopes);
    } catch (error) {
      if (error instanceof InvalidInput) throw new StepUpRefused(record.name);
      throw error;
    }
    const pending = this.flows.pendingStepUp({
      connectionId: record.id,
      generation: record.authorizationGeneration,
      activatedAt: auth.activatedAt,
    });
    if (!pending) return this.start(record, { scopes });
    if (pending.binding) return { openedElsewhere: { ...this.startOwn(pending), scopes } };
    const asked = new Set(pending.scope?.split(" "));
    const link = this.link(pending);
    return scopes.every((scope) => asked.has(scope)) ? link : { ...link, waiting: { scope: pending.scope } };
  }

  /**
   * The go_url opened: a workspace admin (the one who started it, if one did) — or, for a personal
   * connection, its owner and nobody else — binds the flow to this browser with a cookie and is
   * sent to the authorization server. The same browser may open it again; another is refused.
   */
  open(
    flowId: string,
    principalId: string,
    cookieSecret: string | undefined,
  ): { redirect: string; setSecret?: string } | FlowOutcome {
    const flow = this.flows.get(flowId);
    if (!flow || this.flows.expired(flow)) return this.endedOutcome(flowId);
    const refusal = whyNotOpener(this.deps.workspaces, flow, principalId);
    if (refusal) return { status: 403, title: "Not yours to authorize", message: refusal };
    if (flow.binding) {
      if (flow.binding.principalId === principalId && this.flows.boundTo(flow, cookieSecret)) {
        return { redirect: flow.authorizationUrl };
      }
      const { start, expiresAt } = this.startOwn(flow);
      return {
        status: 403,
        title: "Opened in another browser",
        message: `This authorization link was already opened in another browser; finish it there, or wait until ${expiresAt} for it to expire. To start a sign-in of your own: POST ${start} (optional body {"scopes":[…]}), or ${joinToolName("connections", "authorize")} over MCP.`,
      };
    }
    return { redirect: flow.authorizationUrl, setSecret: this.flows.bind(flow, principalId) };
  }

  /** The flow a callback names, to find its binding cookie by. */
  flowOf(state: string | undefined): Flow | undefined {
    return state === undefined ? undefined : this.flows.withState(state);
  }

  /**
   * The authorization server sent the browser back. In order: a known, unexpired, unused state
   * (else 400); the browser and the person that opened the go_url, who may still open it — an
   * admin removed or demoted since, or an owner no longer a member, may not (else 403, and the
   * flow stays usable); then the flow is spent; the answer arrived at the flow's own redirect URI
   * (else it came from another issuer's server: a mix-up, 400, ADR 0077); `iss` (RFC 9207); the server's own error; the code redeemed
   * (an exchange a graceful stop lets finish); the tokens sealed and activated by compare-and-swap,
   * the opener's standing asked again there (else 409 superseded; 403, nothing activated, the
   * flow spent, when they lost it meanwhile); a pending connection photographed, a look the stop
   * cuts (409 stopping, the tokens kept).
   */
  async complete(
    query: { state?: string; code?: string; iss?: string; error?: string },
    /** The callback URL the answer arrived at, without its query. */
    arrivedAt: string,
    principalId: string,
    cookieSecret: string | undefined,
  ): Promise<FlowOutcome> {
    const flow = this.flowOf(query.state);
    if (!flow || this.flows.expired(flow)) return this.endedOutcome(query.state);
    if (!this.flows.boundTo(flow, cookieSecret) || flow.binding?.principalId !== principalId) {
      return {
        status: 403,
        title: "Wrong browser",
        message:
          "This authorization was started in another browser (or by someone else); finish it in the browser that opened the link.",
      };
    }
    // Asked again, not remembered from the go_url: who may authorize can change in the ten
    // minutes a flow lives (test/integration/connections-oauth.test.ts "removed mid-flow").
    const refusal = whyNotOpener(this.deps.workspaces, flow, principalId);
    if (refusal) return { status: 403, title: "Not yours to authorize", message: refusal };
    this.flows.spend(flow);
    // Each issuer that does not promise `iss` has its own callback, and the flow's is the only
    // one its answer may arrive at: an answer at another one was sent by another issuer's server
    // (RFC 9700 §4.4.2), and its code must not go to this flow's token endpoint
    // (test/integration/connections-oauth-hostile.test.ts "mix-up").
    if (arrivedAt !== flow.redirectUri) {
      return {
        status: 400,
        title: "Wrong callback",
        message:
          "This authorization answer arrived at the callback of another authorization server than the one this authorization was started with, and was refused (a mix-up, RFC 9700 §4.4). Start again from Atrium.",
      };
    }
    try {
      // A wrong (or promised and missing) `iss` is refused before anything else in the answer is believed.
      checkResponseIssuer(flow.target, query.iss);
      if (query.error !== undefined) return refusedOutcome(query.error);
      if (!query.code)
        return { status: 400, title: "No code", message: "The callback carries no authorization code." };
      // An exchange of credentials, not cut by the stop but waited for with its activation, its
      // browser gone or not: the code is spent once the server answers (adr/0122, amended;
      // test/integration/connections-oauth-stop.test.ts "token exchange", "browser goes away").
      const code = query.code;
      // The opener's standing is asked once more where the tokens would be activated: the code's
      // redemption may take long, and a demotion or removal meanwhile must not make it live.
      const admitted = openerStanding(this.deps, flow, principalId);
      const record = await this.deps.exchanges.run(async () =>
        activate(this.deps, flow, await this.redeem(flow, code, query.iss), admitted),
      );
      await this.deps.activated(record);
      return {
        status: 200,
        title: "Connected",
        message: `Connection "${flow.name}" is authorized (generation ${record.authorizationGeneration}). You can close this tab.`,
      };
    } catch (error) {
      if (error instanceof WrongIssuer) return { status: 400, title: "Wrong issuer", message: error.message };
      if (error instanceof OpenerStandingLost) return standingLostOutcome(flow, error.loss);
      // The stop was letting the root go: nobody is left to read this, but it is said truly.
      if (error instanceof RootLetGo)
        return { status: 409, title: "Atrium is stopping", message: error.message };
      // Only the first photograph of a pending connection is a look here: the tokens are kept.
      if (isStopping(error)) return stoppingOutcome(flow.name);
      if (error instanceof Superseded) {
        return {
          status: 409,
          title: "Superseded",
          message: `A newer authorization of connection "${flow.name}" was completed first; this one was superseded and not used.`,
        };
      }
      if (error instanceof RedeemFailed) {
        return {
          status: 502,
          title: "Code not redeemed",
          message: `The authorization server did not exchange the code: ${error.message}. Start again from Atrium.`,
        };
      }
      throw error;
    }
  }

  /** The answer for a go_url or callback whose flow is not pending: spent, replaced, or unknown. */
  private endedOutcome(idOrState: string | undefined): FlowOutcome {
    const end = idOrState === undefined ? undefined : this.flows.endedAs(idOrState);
    if (end === "used") return usedOutcome();
    if (end === "replaced") return replacedOutcome();
    return expiredOutcome();
  }

  /** The flow's code exchanged at its token endpoint; a failure retold by its kind. */
  private redeem(flow: Flow, code: string, iss: string | undefined): Promise<TokenSet> {
    return redeemCode(
      flow.target,
      flow.client,
      {
        code,
        iss,
        codeVerifier: flow.codeVerifier,
        redirectUri: flow.redirectUri,
        ...(flow.scope ? { scope: flow.scope } : {}),
      },
      this.deps.fetch,
      this.deps.clock,
    ).catch((error: unknown) => {
      if (error instanceof WrongIssuer) throw error;
      // Retold by its kind: a token endpoint's answer may quote the client secret, the code and
      // its verifier it was sent (test/integration/connections-oauth-hostile.test.ts "quotes").
      throw new RedeemFailed((retold(error, []) as Error).message);
    });
  }

  /** Until when `flow` waits, and where one locked out of it starts a sign-in of their own. */
  private startOwn(flow: Flow): { expiresAt: string; start: string } {
    return {
      expiresAt: new Date(flow.expiresAt).toISOString(),
      start: oauthPaths(this.deps.publicUrl()).start(flow.workspaceId, flow.name),
    };
  }

  private link(flow: Flow): GoLink {
    return {
      go_url: oauthPaths(this.deps.publicUrl()).go(flow.id),
      expiresAt: new Date(flow.expiresAt).toISOString(),
    };
  }
}

class RedeemFailed extends Error {}

/**
 * A scope the server chose (its 401 challenge, or the resource's `scopes_supported`) becomes the
 * connection's at activation, like one an admin named: it is held to the same rules, and an
 * admin who meets a server asking for too much names the scopes they need.
 */
function checkDefaultScope(scope: string): void {
  try {
    checkScopes(scope.split(" ").filter(Boolean));
  } catch (error) {
    if (!(error instanceof InvalidInput)) throw error;
    throw new InvalidInput(
      `The server asks by default for scopes Atrium will not request (more than 50, or not OAuth scope tokens); name the ones needed in "auth.scopes".`,
    );
  }
}
