import { ProtocolError, ProtocolErrorCode, type ServerContext } from "@modelcontextprotocol/server";
import { beforeEach, describe, expect, it } from "vitest";
import { InvalidInput } from "../../../../src/errors.ts";
import { createHandlerGuard } from "../../../../src/http/mcp/handler-guard.ts";
import { createLogger } from "../../../../src/log.ts";
import { loggedErr } from "../../../helpers/atrium.ts";

const REQUEST_ID = "0b7e9a52-0000-4000-8000-000000000002";
// The guard reads only the method from the context.
const ctx = { mcpReq: { method: "resources/read" } } as ServerContext;

let logged: Array<Record<string, unknown>>;
const guard = createHandlerGuard(
  createLogger("error", {
    write(line: string) {
      logged.push(JSON.parse(line) as Record<string, unknown>);
    },
  }),
);

beforeEach(() => {
  logged = [];
});

describe("the front handler guard", () => {
  it("passes a result through untouched", async () => {
    await expect(guard(ctx, REQUEST_ID, async () => ({ contents: [] }))).resolves.toEqual({ contents: [] });
    expect(logged).toEqual([]);
  });

  it("passes a protocol error that is the client's fault, unlogged", async () => {
    const invalid = new ProtocolError(ProtocolErrorCode.InvalidParams, "Resource not found: skill://x");
    await expect(guard(ctx, REQUEST_ID, () => Promise.reject(invalid))).rejects.toBe(invalid);
    expect(logged).toEqual([]);
  });

  it("passes Atrium's typed errors, written for the client, unlogged", async () => {
    const refused = new InvalidInput("A skill name is lowercase letters, digits and hyphens.");
    await expect(guard(ctx, REQUEST_ID, () => Promise.reject(refused))).rejects.toBe(refused);
    expect(logged).toEqual([]);
  });

  it("answers anything else with -32603 naming the request id, and logs it once with its stack", async () => {
    const broken = new Error(
      "ELOOP: too many symbolic links encountered, scandir '/srv/atrium/data/ws_x/skills'",
    );
    const answer = await guard(ctx, REQUEST_ID, () => Promise.reject(broken)).catch(
      (error: unknown) => error,
    );
    expect(answer).toBeInstanceOf(ProtocolError);
    expect(answer).toMatchObject({
      code: ProtocolErrorCode.InternalError,
      message: `resources/read failed unexpectedly; the server logged it as request ${REQUEST_ID}.`,
    });
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ level: 50, requestId: REQUEST_ID, method: "resources/read" });
    expect(loggedErr(logged[0]).message).toBe(broken.message);
    expect(loggedErr(logged[0]).stack).toContain("handler-guard.test.ts");
  });

  it("treats the SDK's own internal-error protocol errors as unexpected too", async () => {
    const internal = new ProtocolError(ProtocolErrorCode.InternalError, "skill://x could not be read");
    const answer = await guard(ctx, REQUEST_ID, () => Promise.reject(internal)).catch(
      (error: unknown) => error,
    );
    expect((answer as Error).message).toContain(REQUEST_ID);
    expect(logged).toHaveLength(1);
  });
});
