import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";
import { canMount, mountSmallDisk, type SmallDisk } from "../helpers/small-disk.ts";

// An append on a disk that fills during its write: the kernel stores some of the lines and
// answers a short count. That is a failed write (adr/0116, amended): cut off, not acknowledged,
// and the log's head read again, so nothing torn is answered as stored and the next append lands.

describe.skipIf(!canMount)("a conversation append cut short by a full disk", () => {
  let disk: SmallDisk;
  let instance: TestAtrium | undefined;
  beforeEach(async () => {
    disk = await mountSmallDisk("8m");
  });
  afterEach(async () => {
    await instance?.close().catch(() => undefined);
    instance = undefined;
    await disk.unmount();
  });

  async function conversationOnFullDisk(text: string) {
    instance = await startTestAtrium({ dir: disk.dir });
    const base = `/v1/workspaces/${await bootstrapWorkspace(instance, "alice")}/conversations`;
    const created = await instance.rest("alice", "POST", base, {});
    const { conversation } = (await created.json()) as { conversation: { id: string } };
    const url = `${base}/${conversation.id}`;
    disk.fillLeaving(8192); // two pages free; the append needs far more
    const appended = await instance.rest("alice", "POST", `${url}/events`, {
      events: [{ type: "message", role: "user", content: [{ type: "text", text }] }],
    });
    const answer = { status: appended.status, body: await appended.text() };
    await disk.free();
    return { url, answer };
  }

  it("is refused, and the conversation holds nothing of it, now and after a restart", async () => {
    const { url, answer } = await conversationOnFullDisk("the quarterly numbers ".repeat(3000));
    expect(answer.status, answer.body.slice(0, 200)).toBe(507);
    expect(JSON.parse(answer.body)).toMatchObject({ error: { code: "insufficient_storage" } });
    const messages = async (from: TestAtrium) => {
      const read = await from.rest("alice", "GET", url);
      return ((await read.json()) as { conversation: { messageCount: number } }).conversation.messageCount;
    };
    expect(await messages(instance as TestAtrium)).toBe(0);
    instance = await (instance as TestAtrium).restart();
    expect(await messages(instance)).toBe(0);
  }, 60_000);

  it("leaves the conversation open to the next append once space is freed", async () => {
    const { url } = await conversationOnFullDisk("x".repeat(60_000));
    const next = await (instance as TestAtrium).rest("alice", "POST", `${url}/events`, {
      events: [{ type: "message", role: "user", content: [{ type: "text", text: "after space was freed" }] }],
    });
    expect(next.status, await next.text()).toBe(200);
    instance = await (instance as TestAtrium).restart();
    const read = await instance.rest("alice", "GET", url);
    const page = (await read.json()) as { conversation: { messageCount: number } };
    expect(page.conversation.messageCount).toBe(1);
  }, 60_000);
});
