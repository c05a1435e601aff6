import { Hono } from "hono";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { errorHandler } from "../../../../src/http/error-response.ts";
import { AuditLedger } from "../../../../src/platform/connections/audit.ts";
import { auditRoutes } from "../../../../src/platform/connections/audit-routes.ts";
import type { AppEnv } from "../../../../src/web/app-env.ts";
import type { WorkspaceRole } from "../../../../src/workspace/model.ts";
import { FakeTime } from "../../../helpers/fake-time.ts";
import { memoryLog } from "../../../helpers/memory-log.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// The route mounted as the HTTP app mounts a workspace's routes, behind a stand-in for the gate that
// admits the caller with the role the test gives; the real gate is the wall suite's to test.

const ALICE = `usr_${"a".repeat(24)}`;
const BOB = `usr_${"b".repeat(24)}`;

let temp: TempRoot;
let ledger: AuditLedger;

function appAs(principalId: string, role: WorkspaceRole): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.onError(errorHandler(memoryLog().log));
  app.use("/v1/workspaces/:ws/*", async (c, next) => {
    const workspace = temp.workspaces.get(c.req.param("ws"));
    if (!workspace) throw new Error("test: no such workspace");
    c.set("requestId", "req-test");
    c.set("principal", { id: principalId, displayName: "P", email: null, orgRole: "member" });
    c.set("admission", { workspace, role });
    await next();
  });
  app.route("/v1/workspaces/:ws", auditRoutes(ledger));
  return app;
}

async function get(app: Hono<AppEnv>, query = ""): Promise<Response> {
  return app.request(`/v1/workspaces/${temp.ws}/audit${query}`);
}

beforeEach(async () => {
  temp = await openTempRoot("audit-routes", ALICE);
  ledger = new AuditLedger(temp.layout.partition("connections"), new FakeTime().clock);
  for (const tool of ["a", "b", "c"]) {
    await ledger.append(temp.ws, { principalId: BOB, connection: "everything", tool, phase: "requested" });
  }
});

afterEach(async () => {
  await temp.remove();
});

describe("GET /v1/workspaces/:ws/audit", () => {
  it("answers an admin with the entries, newest first, paged by cursor", async () => {
    const app = appAs(ALICE, "admin");
    const first = await get(app, "?limit=2");
    expect(first.status).toBe(200);
    const page = (await first.json()) as { entries: { seq: number }[]; nextCursor?: string };
    expect(page.entries.map((e) => e.seq)).toEqual([3, 2]);
    expect(page.nextCursor).toEqual(expect.any(String));
    const second = await get(app, `?limit=2&cursor=${encodeURIComponent(page.nextCursor as string)}`);
    expect(await second.json()).toEqual({
      entries: [expect.objectContaining({ seq: 1, tool: "a", principalId: BOB })],
    });
  });

  it("refuses a member with 403 and a message that says who can read it", async () => {
    const res = await get(appAs(BOB, "member"), "?limit=2");
    expect(res.status).toBe(403);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("forbidden");
    expect(body.error.message).toMatch(/Only a workspace admin can read the connections audit ledger/);
    expect(JSON.stringify(body)).not.toContain('"seq"');
  });

  it("refuses a member before reading a bad query, so the answer is the same 403", async () => {
    expect((await get(appAs(BOB, "member"), "?limit=nope")).status).toBe(403);
  });

  it("refuses a key it does not take by name, saying which it takes (ADR 0095)", async () => {
    const res = await get(appAs(ALICE, "admin"), "?limt=2");
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("invalid_input");
    expect(body.error.message).toContain('"limt" is not a query parameter of GET /v1/workspaces/:ws/audit');
    expect(body.error.message).toContain('it takes "limit", "cursor"');
  });

  it("refuses a key given twice, rather than reading one of them", async () => {
    const res = await get(appAs(ALICE, "admin"), "?limit=2&limit=3");
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.message).toContain('"limit" more than once');
  });

  it("refuses a member before reading a query it does not take, so the answer is the same 403", async () => {
    expect((await get(appAs(BOB, "member"), "?limt=2")).status).toBe(403);
  });

  it.each(["?limit=0", "?limit=501", "?limit=abc", "?limit=-1", "?limit=1.5", "?cursor=bogus", "?cursor="])(
    "answers %s with 400 and what to do",
    async (query) => {
      const res = await get(appAs(ALICE, "admin"), query);
      expect(res.status).toBe(400);
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe("invalid_input");
      expect(body.error.message).toMatch(/limit is a whole number from 1 to 500|page again from the start/);
    },
  );
});
