import type { CallToolResult } from "@modelcontextprotocol/client";
import { Forbidden, WorkspaceNotFound } from "../errors.ts";
import type { UserDirectory } from "../identity/users.ts";
import { scopeForTool } from "../oauth/scopes.ts";
import { accessCheckOf } from "../workspace/access-check.ts";
import type { WorkspaceStore } from "../workspace/store.ts";
import { CallsInFlight, type EndedAccess } from "./calls-in-flight.ts";
import type { IdleCache } from "./idle-cache.ts";
import type { SourceRegistry } from "./registry.ts";
import type { CallContext, Router } from "./router.ts";

/** Who a tool is called as: a person in a workspace, and what their credential allows. */
export interface ToolCaller {
  principalId: string;
  workspaceId: string;
  /** The scopes an access token granted; absent when the credential is not scoped (a session). */
  scopes?: readonly string[];
}

/** A held call's answer, and when the tool it called has itself ended (`callUntilAccessEnds`). */
export type HeldCall = Promise<CallToolResult> & { readonly toolSettled: Promise<void> };

/** Told of each call the dispatch refuses before any source sees it: who, which tool, and why. */
export type DispatchDenied = (denial: {
  caller: ToolCaller;
  tool: string;
  by: "membership" | "scope";
  requestId: string;
}) => Promise<void>;

/**
 * The one way a tool is called, whoever asks — MCP, REST, and later a task run with no HTTP
 * request at all: membership now, then the scope the tool needs, then the router in that
 * workspace's registry only.
 */
export class ToolDispatch {
  constructor(
    private readonly workspaces: Pick<WorkspaceStore, "roleOf">,
    /** Whether a person is deactivated: with `workspaces`, what each call's access check asks. */
    private readonly users: Pick<UserDirectory, "isDeactivated">,
    private readonly registries: IdleCache<SourceRegistry>,
    private readonly router: Router,
  ) {}

  private readonly deniedListeners: DispatchDenied[] = [];
  private readonly inFlight = new CallsInFlight();

  /** An app that records refusals of its tools (the connections audit ledger) listens here. */
  onDenied(listener: DispatchDenied): void {
    this.deniedListeners.push(listener);
  }

  async call(
    caller: ToolCaller,
    name: string,
    args: Record<string, unknown> | undefined,
    context: CallContext,
  ): Promise<CallToolResult> {
    const { principalId, workspaceId, scopes } = caller;
    if (this.workspaces.roleOf(workspaceId, principalId) === undefined) {
      await this.recordDenied({ caller, tool: name, by: "membership", requestId: context.requestId });
      throw new WorkspaceNotFound(workspaceId);
    }
    return this.registries.use(workspaceId, async (registry) => {
      if (scopes !== undefined) {
        const needed = scopeForTool(await this.router.findTool(registry, principalId, name));
        if (!scopes.includes(needed)) {
          await this.recordDenied({ caller, tool: name, by: "scope", requestId: context.requestId });
          throw new Forbidden(
            `Calling ${name} needs the ${needed} scope, which this credential was not granted.`,
          );
        }
      }
      // The one place a caller is built for a tool, whichever surface asked (MCP, REST, a task
      // run): its access check goes with it to every store the tool writes (adr/0154, amended).
      const access = accessCheckOf(this.workspaces, this.users, principalId, workspaceId);
      const host = { principalId, workspaceId, access, ...(scopes !== undefined && { scopes }) };
      return this.router.callTool(registry, host, name, args, context);
    });
  }

  /**
   * `call`, for a caller outside the MCP endpoint, whose muxes cancel their own calls: REST's
   * `tools/call` and a task run. Held until it ends where `cancelCalls` finds it, so a change
   * that ends the caller's access aborts the tool's signal and rejects the call with the refusal
   * the caller now gets (adr/0154). Tied to `context.signal` too, which lives no longer than it.
   * Its `toolSettled` resolves once the tool itself has ended, which a platform tool that ignores
   * its signal may do long after the call was rejected: a task run's slot waits for it (ADR 0106).
   */
  callUntilAccessEnds(
    caller: ToolCaller,
    name: string,
    args: Record<string, unknown> | undefined,
    context: CallContext,
  ): HeldCall {
    let toolWork: Promise<unknown> | undefined;
    const { answer, work } = this.inFlight.hold(caller, (ended) =>
      this.call(caller, name, args, {
        ...context,
        signal: context.signal ? AbortSignal.any([context.signal, ended]) : ended,
        onCalled: (called) => {
          toolWork = called;
        },
      }),
    );
    // The tool is called, if at all, before the dispatch's own call settles.
    const toolSettled = work.then(ignore, ignore).then(() => toolWork?.then(ignore, ignore));
    return Object.assign(answer, { toolSettled });
  }

  /** Cancels the held calls (`callUntilAccessEnds`) of the callers whose access a change just ended. */
  cancelCalls(ended: EndedAccess): void {
    this.inFlight.cancel(ended);
  }

  /**
   * Tells the denial listeners of a call refused before any source saw it; also by the MCP
   * endpoint's scope check, which refuses a call before it reaches the dispatch.
   */
  async recordDenied(denial: Parameters<DispatchDenied>[0]): Promise<void> {
    for (const listener of this.deniedListeners) await listener(denial);
  }
}

function ignore(): void {}
