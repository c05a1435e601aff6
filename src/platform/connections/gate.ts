import { type CallToolResult, ProtocolError, type Tool } from "@modelcontextprotocol/client";
import type { ValidateFunction } from "ajv";
import type { Caller } from "../../sources/caller-meta.ts";
import { SourceRetired } from "../../sources/mcp-source.ts";
import type { Source, SourceCall, SourceClosing } from "../../sources/source.ts";
import { joinToolName } from "../../sources/tool-names.ts";
import { CheckTooCostly } from "../json-schema/check-too-costly.ts";
import { untilAborted } from "../until-aborted.ts";
import { type AuditAppender, auditCall, type Denial, deny, isDenial } from "./call-audit.ts";
import { reauthorizationIn } from "./oauth/step-up.ts";
import type { RemoteSource } from "./remote-source.ts";
import { compileInputSchema, describeSchemaErrors } from "./schemas.ts";
import { servedTools } from "./served-tools.ts";
import { nestsTooDeep, type Snapshot, toolDigest } from "./snapshot.ts";

/** What the gate asks about the connection at call time, from the health loops' own records. */
export interface GateState {
  credentialLapsed(): boolean;
  /**
   * A personal connection's first check (ADR 0042), asked live on every call: may its owner use
   * it here now — still a member, not deactivated, granted in a shared workspace.
   */
  mayUse?(caller: Caller): Promise<Denial | undefined>;
}

/** Told each call's path through the gate (the audit ledger), never its arguments or result. */
export interface CallObserver {
  observe<T extends CallToolResult>(
    call: { tool: string; caller: Caller },
    run: () => Promise<T | Denial>,
  ): Promise<T | Denial>;
}

/**
 * A connection as the router sees it: its tools are its pinned snapshot, their titles naming the
 * connection (served-tools.ts), so listing never calls the server; a call passes, in order, the
 * snapshot, the snapshotted input schema (compiled once per snapshot), the credential, the
 * protocol revision the snapshot was taken over, and the tool's digest as the server lists it
 * now — then it is forwarded. Anything else is refused with what to do, and nothing leaves the
 * process.
 */
export class ConnectionSource implements Source {
  private readonly validators = new Map<string, ValidateFunction>();
  /** The same array on every listing while this source serves: the router keeps lists by it. */
  private served?: Tool[];

  constructor(
    readonly name: string,
    readonly snapshot: Snapshot,
    private readonly live: RemoteSource,
    private readonly state: GateState,
    private readonly ledger: AuditAppender,
    /** A personal connection's owner: the registry serves it to them alone (ADR 0042). */
    readonly owner?: string,
  ) {}

  async listTools(): Promise<Tool[]> {
    this.served ??= servedTools(this.name, this.snapshot.tools);
    return this.served;
  }

  async callTool(
    tool: string,
    args: Record<string, unknown>,
    caller: Caller,
    options: SourceCall = {},
  ): Promise<CallToolResult> {
    const { requestId, signal } = options;
    const call = {
      workspaceId: caller.workspaceId,
      principalId: caller.principalId,
      connection: this.name,
      tool,
      ...(requestId === undefined ? {} : { requestId }),
    };
    const outcome = await auditCall(
      this.ledger,
      call,
      () =>
        this.check(tool, args, caller, signal).catch((error: unknown) => {
          // The drift check's listing needs a token too: no authorization is the credential's denial.
          const reauthorization = reauthorizationIn(error);
          if (reauthorization) return deny("credential", reauthorization.message);
          throw error;
        }),
      async () => {
        try {
          return await this.live.callTool(tool, args, caller, options);
        } catch (error) {
          // A JSON-RPC error is the server's answer (the router shows it); a cancelled call (a
          // task run's timeout) is the caller's choice, not a broken transport.
          // A source closed for good (SourceRetired) is not looked at again: the router calls the
          // source that took its place.
          if (error instanceof ProtocolError || error instanceof SourceRetired || signal?.aborted)
            throw error;
          // The server wants more scope (a re-authorization is started), or the tokens are gone:
          // the call says who must authorize the connection, as a tool error.
          const reauthorization = reauthorizationIn(error);
          if (reauthorization) return refusal(reauthorization.message);
          // The transport failed (a server restarted, or now refuses the revision this client
          // negotiated): connect afresh and look again, so a server that changed its revision is
          // refused by name rather than failing without a reason. The call was allowed and sent,
          // so the ledger records this refusal as its error result.
          await this.live.reset();
          const afterReconnect = await this.check(tool, args, caller, signal).catch(() => undefined);
          if (afterReconnect) return refusal(afterReconnect.reason);
          throw error;
        }
      },
      // A personal connection's result is its owner's: the workspace's admins read the ledger.
      { privateResult: this.owner !== undefined },
    );
    return isDenial(outcome) ? refusal(outcome.reason) : outcome;
  }

  async close(how?: SourceClosing): Promise<void> {
    await this.live.close(how);
  }

  /**
   * The gate; `undefined` when the call may go. Its live checks ask the server (a connect, a
   * re-list) and stop waiting once `signal` aborts: a server that stopped answering would hold the
   * caller until connections.requestTimeoutSeconds (gate.test.ts "stops waiting on the server").
   */
  private async check(
    tool: string,
    args: Record<string, unknown>,
    caller: Caller,
    signal: AbortSignal | undefined,
  ): Promise<Denial | undefined> {
    const asked = <T>(work: Promise<T>) => (signal ? untilAborted(work, signal) : work);
    const refused = await this.state.mayUse?.(caller);
    if (refused) return refused;
    const pinned = this.snapshot.tools.find((t) => t.name === tool);
    const called = joinToolName(this.name, tool);
    const refresh = `an admin can refresh the connection's tools (${joinToolName("connections", "refresh")} "${this.name}") and review the change`;
    if (!pinned)
      return deny(
        "snapshot",
        `${called} is not in the connection's snapshot (version ${this.snapshot.version}).`,
      );
    const invalid = this.argumentsRefusal(pinned, args, called, refresh);
    if (invalid) return deny("schema", invalid);
    if (this.state.credentialLapsed()) {
      return deny(
        "credential",
        `The credential of connection "${this.name}" has lapsed; an admin must re-authorize it before its tools can be called.`,
      );
    }
    const { protocolVersion } = await asked(this.live.describe());
    if (protocolVersion !== this.snapshot.protocolVersion) {
      return deny(
        "protocol",
        `The server of "${this.name}" now speaks MCP ${protocolVersion ?? "(unknown)"}, but its snapshot was taken over ${this.snapshot.protocolVersion}; ${refresh}.`,
      );
    }
    const now = (await asked(this.live.listTools())).find((t) => t.name === tool);
    if (!now || digestOf(now) !== this.snapshot.digests[tool]) {
      return deny(
        "drift",
        `${called} ${now ? "changed" : "disappeared"} upstream since snapshot ${this.snapshot.version} was taken, so it is not called; ${refresh}.`,
      );
    }
    return undefined;
  }

  /** Why the snapshotted input schema of `tool` refuses `args`; undefined when it lets them go. */
  private argumentsRefusal(
    tool: Tool,
    args: Record<string, unknown>,
    called: string,
    refresh: string,
  ): string | undefined {
    let validate: ValidateFunction;
    try {
      validate = this.validator(tool);
    } catch (error) {
      // A snapshot taken before photographing refused such a schema (one that loops, a
      // patternProperties key RE2 cannot match): the call is refused, never a thrown error.
      return `The input schema of ${called} cannot be checked (${(error as Error).message.slice(0, 200)}), so it is not called; ${refresh}.`;
    }
    try {
      if (validate(args)) return undefined;
    } catch (error) {
      // Checking long strings against the schema's patterns, or many items against its unions,
      // would hold the event loop (ADR 0104, 0157).
      if (error instanceof CheckTooCostly)
        return `The arguments for ${called} are too costly to check against its input schema: ${error.message}.`;
      // Each level of the arguments is a call in a recursive schema: past the stack, a refusal.
      if (!(error instanceof RangeError)) throw error;
      return `The arguments for ${called} could not be checked: they are nested too deeply.`;
    }
    return `Invalid arguments for ${called}: ${describeSchemaErrors(validate)}.`;
  }

  private validator(tool: Tool): ValidateFunction {
    let validate = this.validators.get(tool.name);
    if (!validate) {
      validate = compileInputSchema(tool);
      this.validators.set(tool.name, validate);
    }
    return validate;
  }
}

// A live listing is a new array of new tools each time it is taken, so a digest is computed once
// per tool per listing, not once per call.
const liveDigests = new WeakMap<Tool, string>();
/** Not a digest: every snapshot digest is "sha256:…". */
const TOO_DEEP = "too deep";

/**
 * The live `tool`'s digest. One nested deeper than a photograph takes has none a snapshot could
 * hold (it is drift), and digesting it would recurse past the stack: it is told as TOO_DEEP.
 */
function digestOf(tool: Tool): string {
  let digest = liveDigests.get(tool);
  if (digest === undefined) {
    digest = nestsTooDeep(tool) ? TOO_DEEP : toolDigest(tool);
    liveDigests.set(tool, digest);
  }
  return digest;
}

function refusal(reason: string): CallToolResult {
  return { content: [{ type: "text", text: reason }], isError: true };
}
