import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { TooManyRequests } from "../../../errors.ts";
import type { Clock } from "../../../kernel/clock.ts";
import type { OAuthClient } from "./client-identity.ts";
import type { AuthorizationTarget } from "./discovery.ts";

/** How long a go_url and its callback stay usable. */
export const FLOW_TTL_MS = 10 * 60 * 1000;
/**
 * How many sign-ins may wait for their callback at once, instance-wide. Each connection has one
 * per person who started it (and one step-up), so this is reached only by that many connections
 * being signed in to within ten minutes.
 */
export const MAX_PENDING_FLOWS = 1_000;
/**
 * How many of those one person may hold (a workspace, for its connections' step-ups, which nobody
 * starts): a workspace admin can add OAuth connections without a cap, each add starting a flow, and
 * alone would otherwise take every slot of the instance.
 */
export const MAX_PENDING_FLOWS_PER_PERSON = 50;
/** How many spent or replaced flows are remembered, to tell their go_url or callback why it is refused. */
const ENDED_KEPT = 1_000;

/** Why a flow no longer answers: its callback came (`used`), or a newer start took its place. */
export type FlowEnd = "used" | "replaced";

/** One authorization in progress: created by add, start or a step-up, used by one callback. */
export interface Flow {
  /** `oaf_` + 32 hex: the go_url's last segment and the binding cookie's suffix. */
  id: string;
  /** What the authorization server hands back; never the flow id, so the go_url alone cannot answer. */
  state: string;
  workspaceId: string;
  name: string;
  connectionId: string;
  /** The admin who started it; `undefined` for a step-up, which any workspace admin may open. */
  startedBy?: string;
  /** A personal connection's owner: they alone may open the flow, never an admin (ADR 0042). */
  owner?: string;
  /** The compare-and-swap the activation makes: the record as it was when the flow began. */
  generation: number;
  activatedAt: string | undefined;
  scope?: string;
  codeVerifier: string;
  redirectUri: string;
  authorizationUrl: string;
  target: AuthorizationTarget;
  client: OAuthClient;
  expiresAt: number;
  /** Set when a browser opened the go_url: who, and the SHA-256 of the secret its cookie holds. */
  binding?: { principalId: string; secretHash: Buffer };
}

export type NewFlow = Omit<Flow, "id" | "expiresAt" | "binding">;

/**
 * Flows in progress, kept in memory only: the PKCE verifier never leaves the process, and a
 * flow that a restart forgets answers "expired" at its callback, to be started again.
 *
 * Bounded (ADR 0122, amended 2026-12-07): a connection has one pending flow per person who started
 * it, and one step-up (its slot), so a new start replaces the previous one, which answers
 * `replaced` from then on; asked for in a loop, a connection's start left one flow per call for
 * twenty minutes, each holding its authorization URL. At most `MAX_PENDING_FLOWS` slots are held
 * instance-wide, and `MAX_PENDING_FLOWS_PER_PERSON` by one person; one more is refused
 * (`429 oauth_flows_full`), never taken from another slot
 * (test/unit/platform/connections/oauth/flows.test.ts). A spent or replaced flow is remembered by
 * its id and state alone, the newest `ENDED_KEPT`, to say why it is refused; an expired one is
 * forgotten at once (its callback answers "unknown or expired" either way).
 */
export class OAuthFlows {
  private readonly byId = new Map<string, Flow>();
  private readonly byState = new Map<string, Flow>();
  /** The pending flow of each slot (`slotOf`). */
  private readonly bySlot = new Map<string, Flow>();
  /** How many slots each person (`starterOf`) holds. */
  private readonly perStarter = new Map<string, number>();
  /** Flows that ended, by id and by state, oldest first. */
  private readonly ended = new Map<string, FlowEnd>();

  constructor(private readonly clock: Clock) {}

  static newState(): string {
    return randomBytes(32).toString("base64url");
  }

  /** A new flow in its slot, replacing the slot's pending one; refused when every slot is held. */
  create(flow: NewFlow): Flow {
    this.sweep();
    const slot = slotOf(flow);
    const previous = this.bySlot.get(slot);
    if (previous) this.end(previous, "replaced");
    else this.admit(flow);
    const created: Flow = {
      ...flow,
      id: `oaf_${randomBytes(16).toString("hex")}`,
      expiresAt: this.clock() + FLOW_TTL_MS,
    };
    this.byId.set(created.id, created);
    this.byState.set(created.state, created);
    this.bySlot.set(slot, created);
    const starter = starterOf(created);
    this.perStarter.set(starter, (this.perStarter.get(starter) ?? 0) + 1);
    return created;
  }

  /** The pending flow with this id; an ended one is `endedAs`. */
  get(id: string): Flow | undefined {
    return this.byId.get(id);
  }

  /** The pending flow with this state; an ended one is `endedAs`. */
  withState(state: string): Flow | undefined {
    return this.byState.get(state);
  }

  /** Why the flow with this id or state ended, while it is remembered. */
  endedAs(idOrState: string): FlowEnd | undefined {
    return this.ended.get(idOrState);
  }

  /** A callback got past the binding check: the flow answers no other, a replay included. */
  spend(flow: Flow): void {
    this.end(flow, "used");
  }

  /**
   * A connection removed (or its workspace archived): its flows go, and their go_urls answer
   * "unknown". Kept, each add and remove of an OAuth connection left a slot held for ten minutes
   * under a new connection id, and a loop of them filled every slot.
   */
  forgetConnection(connectionId: string): void {
    for (const flow of this.bySlot.values()) if (flow.connectionId === connectionId) this.forget(flow);
  }

  expired(flow: Flow): boolean {
    return this.clock() >= flow.expiresAt;
  }

  /** Binds the flow to the browser opening it; answers the secret for its cookie. */
  bind(flow: Flow, principalId: string): string {
    const secret = randomBytes(32).toString("base64url");
    flow.binding = { principalId, secretHash: digest(secret) };
    return secret;
  }

  /** Whether `secret` (from the request's cookie) is the one the flow was bound with. */
  boundTo(flow: Flow, secret: string | undefined): boolean {
    if (!flow.binding || secret === undefined) return false;
    return timingSafeEqual(flow.binding.secretHash, digest(secret));
  }

  /**
   * The pending, unexpired step-up flow of the connection, whatever scope it asks for, to hand out
   * again rather than start another: a new step-up would replace it, and a workspace admin may be
   * completing it at the authorization server, whose callback would then answer Replaced — members
   * calling tools that need different scopes kept an admin from ever finishing one
   * (test/integration/connections-oauth-step-up-pending.test.ts). Only one started from the record
   * as it is now: a flow from before the last activation could only end 409 superseded, so it is
   * never handed out again (test/integration/connections-oauth.test.ts "a step-up link left unused
   * across a re-authorization").
   */
  pendingStepUp(record: {
    connectionId: string;
    generation: number;
    activatedAt: string | undefined;
  }): Flow | undefined {
    const flow = this.bySlot.get(slotOf({ connectionId: record.connectionId }));
    return flow &&
      flow.generation === record.generation &&
      flow.activatedAt === record.activatedAt &&
      !this.expired(flow)
      ? flow
      : undefined;
  }

  /** Whether a new slot may be held: refused, never made room for by taking another's. */
  private admit(flow: NewFlow): void {
    const wait = `finish a sign-in already started, or wait up to ${FLOW_TTL_MS / 60_000} minutes for pending ones to expire, then start again`;
    if ((this.perStarter.get(starterOf(flow)) ?? 0) >= MAX_PENDING_FLOWS_PER_PERSON) {
      throw new TooManyRequests(
        "oauth_flows_full",
        `${flow.startedBy === undefined && flow.owner === undefined ? "This workspace's connections have" : "You have"} ${MAX_PENDING_FLOWS_PER_PERSON} OAuth sign-ins waiting for their callback, the most one may hold at once; ${wait}.`,
      );
    }
    if (this.bySlot.size >= MAX_PENDING_FLOWS) {
      throw new TooManyRequests(
        "oauth_flows_full",
        `Atrium already holds ${MAX_PENDING_FLOWS} OAuth sign-ins waiting for their callback, its most at once; ${wait}.`,
      );
    }
  }

  private end(flow: Flow, how: FlowEnd): void {
    this.forget(flow);
    this.ended.set(flow.id, how);
    this.ended.set(flow.state, how);
    for (const key of this.ended.keys()) {
      if (this.ended.size <= 2 * ENDED_KEPT) break;
      this.ended.delete(key);
    }
  }

  private forget(flow: Flow): void {
    // Only the flow's own entries: its slot may already hold the flow that replaced it.
    if (this.byId.get(flow.id) === flow) this.byId.delete(flow.id);
    if (this.byState.get(flow.state) === flow) this.byState.delete(flow.state);
    const slot = slotOf(flow);
    if (this.bySlot.get(slot) !== flow) return;
    this.bySlot.delete(slot);
    const starter = starterOf(flow);
    const held = (this.perStarter.get(starter) ?? 1) - 1;
    if (held > 0) this.perStarter.set(starter, held);
    else this.perStarter.delete(starter);
  }

  private sweep(): void {
    for (const flow of this.bySlot.values()) if (this.expired(flow)) this.forget(flow);
  }
}

/** A connection's flows started by one person, or (no `startedBy`) its step-ups: one pending at a time. */
function slotOf(flow: { connectionId: string; startedBy?: string }): string {
  return `${flow.connectionId}/${flow.startedBy ?? ""}`;
}

/** Who holds a flow's slot: who started it, else (a step-up) the personal connection's owner, else its workspace. */
function starterOf(flow: { startedBy?: string; owner?: string; workspaceId: string }): string {
  return flow.startedBy ?? flow.owner ?? flow.workspaceId;
}

function digest(secret: string): Buffer {
  return createHash("sha256").update(secret).digest();
}
