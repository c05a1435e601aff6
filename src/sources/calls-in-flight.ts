import { AccountDeactivated, type AtriumError, WorkspaceNotFound } from "../errors.ts";
import { untilAborted } from "../platform/until-aborted.ts";

/**
 * Whose access a change ended: an archived workspace's callers (`{ workspaceId }`), a person's in a
 * workspace they were removed from (`{ workspaceId, principalId }`), a deactivated person's
 * everywhere (`{ principalId }`).
 */
export type EndedAccess =
  | { workspaceId: string; principalId?: string }
  | { workspaceId?: string; principalId: string };

/** Who a held call was made as. */
interface HeldCaller {
  principalId: string;
  workspaceId: string;
}

interface Held extends HeldCaller {
  controller: AbortController;
}

/**
 * The tool calls in flight made outside the MCP endpoint's muxes, which cancel their own: REST's
 * `tools/call` and a task run's call. A change that ends a caller's access cancels theirs here as
 * the muxes cancel an MCP call (adr/0154), so neither twin of an MCP call outlives it. In memory:
 * one set entry per call, no lookup on the way in.
 */
export class CallsInFlight {
  private readonly held = new Set<Held>();

  /**
   * Runs `work` with a signal that aborts when a change ends `caller`'s access. `answer` is its
   * outcome; once that signal aborts, it rejects at once with the refusal the caller's next
   * request gets (`404 workspace_not_found`, `403` deactivated), whether or not the work heeds its
   * signal. `work` is the work's own promise, which may settle later.
   */
  hold<T>(
    caller: HeldCaller,
    work: (ended: AbortSignal) => Promise<T>,
  ): { answer: Promise<T>; work: Promise<T> } {
    const held: Held = {
      principalId: caller.principalId,
      workspaceId: caller.workspaceId,
      controller: new AbortController(),
    };
    this.held.add(held);
    const running = work(held.controller.signal);
    const answer = untilAborted(running, held.controller.signal).finally(() => this.held.delete(held));
    return { answer, work: running };
  }

  /** Cancels every held call whose caller `ended` names, with the refusal they now get. */
  cancel(ended: EndedAccess): void {
    for (const held of this.held) {
      if (ended.workspaceId !== undefined && held.workspaceId !== ended.workspaceId) continue;
      if (ended.principalId !== undefined && held.principalId !== ended.principalId) continue;
      this.held.delete(held);
      held.controller.abort(refusalFor(ended, held));
    }
  }
}

/** A deactivation is refused as deactivated everywhere; an archive or a removal as not there. */
function refusalFor(ended: EndedAccess, held: Held): AtriumError {
  return ended.workspaceId === undefined ? new AccountDeactivated() : new WorkspaceNotFound(held.workspaceId);
}
