import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { Clock } from "../../../kernel/clock.ts";
import type { OAuthClient } from "./client-identity.ts";
import type { AuthorizationTarget } from "./discovery.ts";

/** How long a go_url and its callback stay usable. */
export const FLOW_TTL_MS = 10 * 60 * 1000;

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
  used: boolean;
}

export type NewFlow = Omit<Flow, "id" | "expiresAt" | "binding" | "used">;

/**
 * Flows in progress, kept in memory only: the PKCE verifier never leaves the process, and a
 * flow that a restart forgets answers "expired" at its callback, to be started again. A used
 * flow is kept until it expires, so a replayed callback is told so (400) rather than "unknown".
 */
export class OAuthFlows {
  private readonly byId = new Map<string, Flow>();
  private readonly byState = new Map<string, Flow>();

  constructor(private readonly clock: Clock) {}

  static newState(): string {
    return randomBytes(32).toString("base64url");
  }

  create(flow: NewFlow): Flow {
    this.sweep();
    const created: Flow = {
      ...flow,
      id: `oaf_${randomBytes(16).toString("hex")}`,
      expiresAt: this.clock() + FLOW_TTL_MS,
      used: false,
    };
    this.byId.set(created.id, created);
    this.byState.set(created.state, created);
    return created;
  }

  get(id: string): Flow | undefined {
    return this.byId.get(id);
  }

  withState(state: string): Flow | undefined {
    return this.byState.get(state);
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
   * An unused, unexpired step-up flow of the connection asking for `scope`, to hand out again
   * rather than start another. Only one started from the record as it is now: a flow from before
   * the last activation could only end 409 superseded, so it is never handed out again
   * (test/integration/connections-oauth.test.ts "a step-up link left unused across a re-authorization").
   */
  pendingStepUp(
    record: { connectionId: string; generation: number; activatedAt: string | undefined },
    scope: string | undefined,
  ): Flow | undefined {
    this.sweep();
    return [...this.byId.values()].find(
      (flow) =>
        flow.connectionId === record.connectionId &&
        flow.generation === record.generation &&
        flow.activatedAt === record.activatedAt &&
        flow.startedBy === undefined &&
        !flow.used &&
        !this.expired(flow) &&
        flow.scope === scope,
    );
  }

  private sweep(): void {
    const now = this.clock();
    for (const flow of this.byId.values()) {
      if (now >= flow.expiresAt + FLOW_TTL_MS) {
        this.byId.delete(flow.id);
        this.byState.delete(flow.state);
      }
    }
  }
}

function digest(secret: string): Buffer {
  return createHash("sha256").update(secret).digest();
}
