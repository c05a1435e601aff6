import { describe, expect, it } from "vitest";
import { AccountDeactivated, WorkspaceNotFound } from "../../../src/errors.ts";
import { CallsInFlight } from "../../../src/sources/calls-in-flight.ts";

// The calls made outside the MCP muxes (REST's tools/call, a task run's) end with their caller's
// access (ADR 0154, amended). The work here never settles by itself: it ignores its signal as a
// platform tool may, and the held call still ends at the cancel, with the caller's refusal.

const ALICE = "usr_aaaaaaaaaaaaaaaaaaaaaaaa";
const BOB = "usr_bbbbbbbbbbbbbbbbbbbbbbbb";
const ONE = "ws_0123456789abcdef";
const TWO = "ws_fedcba9876543210";

/** A held call of `principalId` in `workspaceId` whose work ends only when `finish` is called. */
function holdOne(calls: CallsInFlight, principalId: string, workspaceId: string) {
  let finish: (value: string) => void = () => undefined;
  let signal: AbortSignal | undefined;
  const { answer: outcome } = calls.hold({ principalId, workspaceId }, (ended) => {
    signal = ended;
    return new Promise<string>((resolve) => {
      finish = resolve;
    });
  });
  outcome.catch(() => undefined);
  return { outcome, finish: (value: string) => finish(value), aborted: () => signal?.aborted ?? false };
}

describe("CallsInFlight", () => {
  it("a deactivation ends the person's calls in every workspace, refused as deactivated", async () => {
    const calls = new CallsInFlight();
    const inOne = holdOne(calls, ALICE, ONE);
    const inTwo = holdOne(calls, ALICE, TWO);
    const bobs = holdOne(calls, BOB, ONE);
    calls.cancel({ principalId: ALICE });
    await expect(inOne.outcome).rejects.toBeInstanceOf(AccountDeactivated);
    await expect(inTwo.outcome).rejects.toBeInstanceOf(AccountDeactivated);
    expect([inOne.aborted(), inTwo.aborted(), bobs.aborted()]).toEqual([true, true, false]);
    bobs.finish("answered");
    await expect(bobs.outcome).resolves.toBe("answered");
  });

  it("a removal ends the person's calls in that workspace only, refused as not there", async () => {
    const calls = new CallsInFlight();
    const inOne = holdOne(calls, ALICE, ONE);
    const inTwo = holdOne(calls, ALICE, TWO);
    calls.cancel({ principalId: ALICE, workspaceId: ONE });
    await expect(inOne.outcome).rejects.toEqual(new WorkspaceNotFound(ONE));
    expect(inTwo.aborted()).toBe(false);
    inTwo.finish("answered");
    await expect(inTwo.outcome).resolves.toBe("answered");
  });

  it("an archive ends everyone's calls in the workspace", async () => {
    const calls = new CallsInFlight();
    const alices = holdOne(calls, ALICE, ONE);
    const bobs = holdOne(calls, BOB, ONE);
    const elsewhere = holdOne(calls, BOB, TWO);
    calls.cancel({ workspaceId: ONE });
    await expect(alices.outcome).rejects.toBeInstanceOf(WorkspaceNotFound);
    await expect(bobs.outcome).rejects.toBeInstanceOf(WorkspaceNotFound);
    expect(elsewhere.aborted()).toBe(false);
    elsewhere.finish("answered");
    await expect(elsewhere.outcome).resolves.toBe("answered");
  });

  it("a call that has ended is no longer held: a later change aborts nothing of it", async () => {
    const calls = new CallsInFlight();
    const done = holdOne(calls, ALICE, ONE);
    done.finish("answered");
    await expect(done.outcome).resolves.toBe("answered");
    calls.cancel({ principalId: ALICE });
    expect(done.aborted()).toBe(false);
  });
});
