import { describe, expect, it } from "vitest";
import { TooManyRequests } from "../../../../../src/errors.ts";
import type { OAuthClient } from "../../../../../src/platform/connections/oauth/client-identity.ts";
import type { AuthorizationTarget } from "../../../../../src/platform/connections/oauth/discovery.ts";
import {
  FLOW_TTL_MS,
  MAX_PENDING_FLOWS,
  MAX_PENDING_FLOWS_PER_PERSON,
  type NewFlow,
  OAuthFlows,
} from "../../../../../src/platform/connections/oauth/flows.ts";
import { FakeTime } from "../../../../helpers/fake-time.ts";

const TARGET = { issuer: "https://as.example" } as AuthorizationTarget;
const CLIENT = { info: { client_id: "atrium" }, how: "registered" } as OAuthClient;

/** A flow of `connectionId` started by `startedBy` (none: a step-up). */
function flowOf(connectionId: string, startedBy?: string, scope?: string): NewFlow {
  return {
    state: OAuthFlows.newState(),
    workspaceId: "ws_0000000000000001",
    name: "notes",
    connectionId,
    ...(startedBy === undefined ? {} : { startedBy }),
    generation: 1,
    activatedAt: undefined,
    ...(scope === undefined ? {} : { scope }),
    codeVerifier: "v".repeat(43),
    redirectUri: "http://127.0.0.1/callback",
    authorizationUrl: `https://as.example/authorize?${"x".repeat(1000)}`,
    target: TARGET,
    client: CLIENT,
  };
}

describe("OAuth flows", () => {
  it("hold one pending flow per connection and person: a new start replaces the last, answered as replaced", () => {
    const flows = new OAuthFlows(new FakeTime().clock);
    const started = Array.from({ length: 2_000 }, () => flows.create(flowOf("cn_a", "usr_alice")));
    const last = started.at(-1);
    const pending = started.filter((flow) => flows.get(flow.id) !== undefined);
    expect(pending).toEqual([last]);
    expect(flows.withState(started[1_998]?.state ?? "")).toBeUndefined();
    expect(flows.endedAs(started[1_998]?.id ?? "")).toBe("replaced");
    expect(flows.endedAs(started[1_998]?.state ?? "")).toBe("replaced");
    // Only the newest ended flows are remembered: an old one is answered as unknown.
    expect(flows.endedAs(started[0]?.id ?? "")).toBeUndefined();
  });

  it("keep each person's, each connection's and the step-up's flow apart", () => {
    const flows = new OAuthFlows(new FakeTime().clock);
    const alice = flows.create(flowOf("cn_a", "usr_alice"));
    const bob = flows.create(flowOf("cn_a", "usr_bob"));
    const other = flows.create(flowOf("cn_b", "usr_alice"));
    const stepUp = flows.create(flowOf("cn_a", undefined, "read write"));
    for (const flow of [alice, bob, other, stepUp]) expect(flows.get(flow.id)).toBe(flow);
    const record = { connectionId: "cn_a", generation: 1, activatedAt: undefined };
    expect(flows.pendingStepUp(record)).toBe(stepUp);
  });

  it("hand out a pending step-up an admin has opened to a call needing another scope, never replacing it", () => {
    const flows = new OAuthFlows(new FakeTime().clock);
    const opened = flows.create(flowOf("cn_a", undefined, "read files.write"));
    flows.bind(opened, "usr_admin");
    const record = { connectionId: "cn_a", generation: 1, activatedAt: undefined };
    expect(flows.pendingStepUp(record)).toBe(opened);
    expect(flows.withState(opened.state)).toBe(opened);
    // One from before the last activation is not: it could only end 409 superseded.
    expect(flows.pendingStepUp({ ...record, generation: 2 })).toBeUndefined();
  });

  it("let a removed connection's flows go, and no other's", () => {
    const flows = new OAuthFlows(new FakeTime().clock);
    const removed = [
      flows.create(flowOf("cn_a", "usr_alice")),
      flows.create(flowOf("cn_a", undefined, "read")),
    ];
    const kept = flows.create(flowOf("cn_b", "usr_alice"));
    flows.forgetConnection("cn_a");
    for (const flow of removed) expect(flows.get(flow.id)).toBeUndefined();
    expect(flows.get(kept.id)).toBe(kept);
  });

  it("a spent flow answers no other callback, and says it was used", () => {
    const flows = new OAuthFlows(new FakeTime().clock);
    const flow = flows.create(flowOf("cn_a", "usr_alice"));
    flows.spend(flow);
    expect(flows.withState(flow.state)).toBeUndefined();
    expect(flows.endedAs(flow.state)).toBe("used");
    // The next start of the same connection begins afresh.
    const next = flows.create(flowOf("cn_a", "usr_alice"));
    expect(flows.get(next.id)).toBe(next);
    expect(flows.endedAs(flow.id)).toBe("used");
  });

  it("refuse one more connection's sign-in at the cap, taking none of the others, until one expires", async () => {
    const time = new FakeTime();
    const flows = new OAuthFlows(time.clock);
    const held = Array.from({ length: MAX_PENDING_FLOWS }, (_, i) =>
      flows.create(flowOf(`cn_${i}`, `usr_${i}`)),
    );
    let refused: unknown;
    try {
      flows.create(flowOf("cn_more", "usr_bob"));
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(TooManyRequests);
    expect(refused).toMatchObject({ code: "oauth_flows_full", status: 429 });
    expect((refused as Error).message).toMatch(/finish a sign-in already started, or wait up to 10 minutes/);
    for (const flow of held) expect(flows.get(flow.id)).toBe(flow);
    // A start of a connection already held replaces its own flow, at the cap too.
    const again = flows.create(flowOf("cn_0", "usr_0"));
    expect(flows.get(again.id)).toBe(again);
    await time.advance(FLOW_TTL_MS);
    const after = flows.create(flowOf("cn_more", "usr_bob"));
    expect(flows.get(after.id)).toBe(after);
    expect(flows.get(held[1]?.id ?? "")).toBeUndefined();
  });

  it("refuse one person's sign-in past their own cap, while others still start theirs", () => {
    const flows = new OAuthFlows(new FakeTime().clock);
    for (let i = 0; i < MAX_PENDING_FLOWS_PER_PERSON; i++) flows.create(flowOf(`cn_${i}`, "usr_mallory"));
    expect(() => flows.create(flowOf("cn_more", "usr_mallory"))).toThrow(
      /You have 50 OAuth sign-ins waiting/,
    );
    const alice = flows.create(flowOf("cn_more", "usr_alice"));
    expect(flows.get(alice.id)).toBe(alice);
    // A connection of theirs removed frees its place.
    flows.forgetConnection("cn_0");
    expect(flows.get(flows.create(flowOf("cn_more", "usr_mallory")).id)).toBeDefined();
  });
});
