import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NotificationView } from "../../src/platform/notifications/model.ts";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { eventually } from "../helpers/eventually.ts";
import { MCP_ERAS } from "../helpers/mcp-eras.ts";
import { addMember } from "../helpers/members.ts";
import { SseReader } from "../helpers/sse.ts";

// The notifications app over real HTTP: the inbox the runtime records into, read and
// acknowledged per member over MCP (both eras) and REST, announced on the event stream.
let instance: TestAtrium;
let ws: string;
let other: string;
const bobId = testPrincipal("bob").id;
/** How many entries the first workspace's inbox holds so far. */
let posted = 0;

interface Page {
  notifications: NotificationView[];
  nextCursor?: string;
}

async function inbox(user: string, query = "", workspaceId = ws): Promise<Page> {
  const response = await instance.rest(user, "GET", `/v1/workspaces/${workspaceId}/notifications${query}`);
  expect(response.status).toBe(200);
  return (await response.json()) as Page;
}

/**
 * The runtime's one producer today: an org admin deactivates a member. The inbox hears it from
 * the event bus after the answer, so this waits until `workspaceId`'s inbox holds `count` entries.
 */
async function deactivate(user: string, count: number, workspaceId = ws): Promise<void> {
  const id = testPrincipal(user).id;
  expect((await instance.rest("orgadmin-olga", "POST", `/v1/users/${id}/deactivate`)).status).toBe(200);
  await eventually(async () =>
    expect((await inbox("alice", "", workspaceId)).notifications).toHaveLength(count),
  );
}

beforeAll(async () => {
  instance = await startTestAtrium();
  ws = await bootstrapWorkspace(instance, "alice");
  other = await bootstrapWorkspace(instance, "carol");
  await addMember(instance.rest, "alice", ws, "bob", { principalId: bobId });
});

afterAll(async () => {
  await instance?.stop();
});

describe("the inbox", () => {
  it("records a deactivation in every workspace the person belonged to, stamped by the runtime, and announces it", async () => {
    const dave = testPrincipal("dave").id;
    await addMember(instance.rest, "alice", ws, "dave", { principalId: dave });
    await addMember(instance.rest, "carol", other, "dave", { principalId: dave });
    const response = await instance.rest("bob", "GET", `/v1/workspaces/${ws}/events`);
    const bobsStream = new SseReader(response);
    await bobsStream.next();
    await deactivate("dave", ++posted);
    const [entry] = (await inbox("alice")).notifications;
    expect(entry).toMatchObject({
      id: expect.stringMatching(/^ntf_[0-9a-f]{24}$/),
      seq: 1,
      workspaceId: ws,
      source: "workspace",
      severity: "warning",
      title: expect.stringContaining("was deactivated by an org admin"),
      data: { principalId: dave },
      acked: false,
    });
    await eventually(async () => expect((await inbox("carol", "", other)).notifications).toHaveLength(1));
    expect((await inbox("carol", "", other)).notifications).toEqual([
      expect.objectContaining({ seq: 1, workspaceId: other, data: { principalId: dave } }),
    ]);
    expect((await bobsStream.nextEvent())?.event).toBe("member.deactivated");
    expect(await bobsStream.nextEvent()).toMatchObject({
      event: "notification.created",
      data: { workspaceId: ws, notification: { id: entry?.id, seq: 1, source: "workspace" } },
    });
    await bobsStream.close();
  });

  it.each(MCP_ERAS)("is read and acknowledged per member over MCP (%s)", async (era) => {
    const leaver = `leaver-${era}`;
    await addMember(instance.rest, "alice", ws, leaver, { principalId: testPrincipal(leaver).id });
    await deactivate(leaver, ++posted);
    const alice = await instance.mcpClient("alice", ws, { era });
    const listed = await alice.callTool({ name: "notifications__list", arguments: { unacked: true } });
    const [first] = (listed.structuredContent as unknown as Page).notifications;
    expect(first?.acked).toBe(false);
    const read = await alice.callTool({ name: "notifications__read", arguments: { id: first?.id } });
    expect((read.structuredContent as { notification: NotificationView }).notification.id).toBe(first?.id);
    const acked = await alice.callTool({ name: "notifications__ack", arguments: { ids: [first?.id] } });
    expect(acked.structuredContent).toEqual({ acked: 1 });
    expect((await inbox("alice", "?unacked=true")).notifications.map((n) => n.id)).not.toContain(first?.id);
    // Bob's view is his own: Alice's acknowledgement is not his.
    expect((await inbox("bob", "?unacked=true")).notifications.map((n) => n.id)).toContain(first?.id);
  });

  it("acknowledges over REST, and refuses a request that names neither ids nor all, or both", async () => {
    await instance.rest("alice", "POST", `/v1/workspaces/${ws}/notifications/ack`, { all: true });
    await instance.rest("bob", "POST", `/v1/workspaces/${ws}/notifications/ack`, { all: true });
    const leaver = "leaver-rest";
    await addMember(instance.rest, "alice", ws, leaver, { principalId: testPrincipal(leaver).id });
    await deactivate(leaver, ++posted);
    const [entry] = (await inbox("bob")).notifications;
    const one = await instance.rest("bob", "GET", `/v1/workspaces/${ws}/notifications/${entry?.id}`);
    expect(((await one.json()) as NotificationView).acked).toBe(false);
    for (const body of [{}, { ids: [entry?.id], all: true }, { all: false }, { ids: "ntf_x" }]) {
      const refused = await instance.rest("bob", "POST", `/v1/workspaces/${ws}/notifications/ack`, body);
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(/ids|all/);
    }
    const done = await instance.rest("bob", "POST", `/v1/workspaces/${ws}/notifications/ack`, {
      ids: [entry?.id],
    });
    expect(await done.json()).toEqual({ acked: 1 });
    expect((await inbox("bob", "?unacked=true")).notifications).toEqual([]);
  });

  it("answers an unknown id with 404 and a bad query with 400, over REST and as a tool error", async () => {
    const missing = await instance.rest(
      "alice",
      "GET",
      `/v1/workspaces/${ws}/notifications/ntf_${"0".repeat(24)}`,
    );
    expect(missing.status).toBe(404);
    for (const query of ["?limit=0", "?limit=abc", "?cursor=xyz", "?unacked=maybe"]) {
      const bad = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/notifications${query}`);
      expect(bad.status, query).toBe(400);
    }
    const alice = await instance.mcpClient("alice", ws);
    const result = await alice.callTool({ name: "notifications__read", arguments: { id: "ntf_nope" } });
    expect(result.isError).toBe(true);
    expect(result.content).toEqual([{ type: "text", text: expect.stringContaining("No notification") }]);
  });

  it("keeps its sequence across a restart", async () => {
    instance = await instance.restart();
    const erin = testPrincipal("erin").id;
    await addMember(instance.rest, "alice", ws, "erin", { principalId: erin });
    await deactivate("erin", ++posted);
    const seqs = (await inbox("alice")).notifications.map((n) => n.seq);
    expect(seqs).toEqual(Array.from({ length: posted }, (_, i) => posted - i));
    // Acknowledgements are on disk too: Alice acknowledged every entry before the one the REST
    // test added, so only that one and the newest are new to her.
    expect((await inbox("alice", "?unacked=true")).notifications.map((n) => n.seq)).toEqual([
      posted,
      posted - 1,
    ]);
  });
});

describe("the deactivation notice", () => {
  // The display name is the identity provider's claim, unchecked: a title built from it as given
  // was refused by checkDraft past 200 characters or with a control character, and the notice lost.
  const long = "Maria-Anna ".repeat(30).slice(0, 300);
  it.each([
    ["300 characters", long, `${long.slice(0, 167)}… was deactivated by an org admin`],
    ["a tab in it", "Grace\tHopper", "Grace Hopper was deactivated by an org admin"],
  ])("is recorded for a person whose display name has %s", async (_why, name, title) => {
    const id = testPrincipal(name).id;
    await addMember(instance.rest, "alice", ws, name, { principalId: id });
    await deactivate(name, ++posted);
    const [entry] = (await inbox("alice")).notifications;
    expect(entry).toMatchObject({ source: "workspace", title, data: { principalId: id } });
    expect(entry?.title.length).toBeLessThanOrEqual(200); // the most a title may hold
  });
});
