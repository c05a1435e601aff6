import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AtriumEvent } from "../../src/kernel/events.ts";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import { addMember } from "../helpers/members.ts";

// The kernel pieces as startAtrium wires them: the instance clock stamps what the REST
// surface writes, and each real write publishes exactly one event on the instance's bus.
const MAX_UPLOAD_BYTES = 64;
const time = new FakeTime();
let instance: TestAtrium;
let ws: string;
let published: AtriumEvent[];

beforeAll(async () => {
  instance = await startTestAtrium({ maxUploadBytes: MAX_UPLOAD_BYTES, clock: time.clock });
  ws = await bootstrapWorkspace(instance, "alice");
  published = [];
  instance.atrium.events.subscribe({ workspaceId: ws }, (event) => void published.push(event));
});

afterAll(async () => {
  await instance?.close();
});

describe("events from the REST surface, through startAtrium", () => {
  it("an upload publishes one file.created stamped by the instance clock; a refused one publishes none", async () => {
    published.length = 0;
    const tooBig = await instance.rest(
      "alice",
      "POST",
      `/v1/workspaces/${ws}/files?name=big.bin`,
      "x".repeat(65),
    );
    expect(tooBig.status).toBe(413);
    expect(published).toEqual([]);
    const response = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/files?name=a.txt`, "hello", {
      "content-type": "text/plain",
    });
    expect(response.status).toBe(201);
    const meta = (await response.json()) as { id: string; createdAt: string };
    expect(meta.createdAt).toBe(new Date(time.clock()).toISOString());
    expect(published).toEqual([
      {
        type: "file.created",
        workspaceId: ws,
        ownerId: testPrincipal("alice").id,
        file: { id: meta.id, name: "a.txt", mimeType: "text/plain", size: 5, createdAt: meta.createdAt },
      },
    ]);
  });

  it("joining and being removed publish member.added and member.removed", async () => {
    published.length = 0;
    const bob = testPrincipal("bob").id;
    await addMember(instance.rest, "alice", ws, "bob", { principalId: bob });
    const removed = await instance.rest("alice", "DELETE", `/v1/workspaces/${ws}/members/${bob}`);
    expect(removed.status).toBeLessThan(300);
    expect(published).toEqual([
      { type: "member.added", workspaceId: ws, principalId: bob, role: "member" },
      { type: "member.removed", workspaceId: ws, principalId: bob },
    ]);
  });
});
