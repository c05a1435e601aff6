import type { UserDirectory } from "../../identity/users.ts";
import type { HeldCall, ToolDispatch } from "../../sources/dispatch.ts";
import type { Run, RunError, Task } from "./model.ts";

/**
 * A remote source's MCP client ends a call on its own timer (60 s unless told otherwise). A run
 * gives it the run's whole timeout and a little more, so the run's own timer is the one that ends
 * the call: recorded `timed_out` and cancelled at the server, never cut short as `failed`.
 */
const CLIENT_TIMEOUT_MARGIN_MS = 1000;

/** The words every request of a deactivated person gets (http/middleware/authenticate.ts). */
const DEACTIVATED_MESSAGE = "This account has been deactivated by an org admin.";

/**
 * A deactivated owner is refused before the dispatch, in the words a request of theirs gets
 * (the dispatch checks membership, not deactivation, which the authenticate middleware does).
 */
export function ownerRefusal(users: Pick<UserDirectory, "isDeactivated">, task: Task): RunError | undefined {
  if (!users.isDeactivated(task.ownerId)) return undefined;
  return { code: "forbidden", message: DEACTIVATED_MESSAGE, reason: "owner_deactivated" };
}

/**
 * The run's call of its task's action through the one dispatch, as the task's owner (TaskRunner),
 * with the run's input over the action's arguments; `signal` is the run's abort. Held as REST's
 * calls are: the owner's removal or deactivation, or the workspace's archive, cancels it, and the
 * run fails with the refusal a run started then gets (adr/0154, amended).
 */
export function callAsOwner(dispatch: ToolDispatch, task: Task, run: Run, signal: AbortSignal): HeldCall {
  return dispatch.callUntilAccessEnds(
    {
      principalId: task.ownerId,
      workspaceId: task.workspaceId,
      ...(task.scopes === undefined ? {} : { scopes: task.scopes }),
    },
    task.action.tool,
    { ...task.action.arguments, ...run.input },
    {
      requestId: run.id,
      signal,
      timeoutMs: task.limits.timeoutSeconds * 1000 + CLIENT_TIMEOUT_MARGIN_MS,
    },
  );
}
