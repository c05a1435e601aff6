import { appendFile, readFile, rm, stat, truncate } from "node:fs/promises";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SNAPSHOT_FILE } from "../../src/platform/conversations/conversation-indexes.ts";
import type { JsonExport } from "../../src/platform/conversations/export.ts";
import type { SearchPage } from "../../src/platform/conversations/finder.ts";
import type { ConversationEvent, ConversationSummary } from "../../src/platform/conversations/model.ts";
import { SNAPSHOT_DELAY_MS } from "../../src/platform/conversations/snapshot-saves.ts";
import { mapBounded } from "../../src/storage/bounded.ts";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { eventually } from "../helpers/eventually.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import { MCP_ERAS } from "../helpers/mcp-eras.ts";
import { addMember } from "../helpers/members.ts";
import { SseReader } from "../helpers/sse.ts";

// The conversations app over real HTTP (issue 14): logs written through MCP and read over REST,
// private to their owner on every surface, forked, searched through the index, exported, and
// kept whole through a torn line and concurrent appends.
const MAX_EVENT_BYTES = 4096;
const MAX_CONVERSATION_BYTES = 64 * 1024;
const time = new FakeTime();
let instance: TestAtrium;
let ws: string;
const aliceId = testPrincipal("alice").id;
const bobId = testPrincipal("bob").id;

interface GetPage {
  conversation: ConversationSummary;
  events: ConversationEvent[];
  nextCursor?: string;
}

const text = (role: "user" | "assistant", words: string) => ({
  type: "message" as const,
  role,
  content: [{ type: "text" as const, text: words }],
});

async function json<T>(response: Response, status: number): Promise<T> {
  const body = await response.text();
  expect(response.status, body).toBe(status);
  return (body === "" ? undefined : JSON.parse(body)) as T;
}

async function create(
  user: string,
  body: Record<string, unknown> = {},
  workspaceId = ws,
): Promise<ConversationSummary> {
  const response = await instance.rest(user, "POST", `/v1/workspaces/${workspaceId}/conversations`, body);
  return (await json<{ conversation: ConversationSummary }>(response, 201)).conversation;
}

async function append(user: string, id: string, events: unknown[]): Promise<Response> {
  return instance.rest(user, "POST", `/v1/workspaces/${ws}/conversations/${id}/events`, { events });
}

async function get(user: string, id: string, query = ""): Promise<GetPage> {
  return json<GetPage>(
    await instance.rest(user, "GET", `/v1/workspaces/${ws}/conversations/${id}${query}`),
    200,
  );
}

async function search(user: string, query: string, workspaceId = ws): Promise<SearchPage> {
  const path = `/v1/workspaces/${workspaceId}/conversations/search?query=${encodeURIComponent(query)}`;
  return json<SearchPage>(await instance.rest(user, "GET", path), 200);
}

/** How many conversations a saved snapshot holds: its records are one per line after the header. */
async function snapshotConversations(path: string): Promise<number> {
  const lines = (await readFile(path, "utf8")).split("\n").filter(Boolean);
  return lines
    .slice(1)
    .map((line) => (JSON.parse(line) as { conversations?: unknown[] }).conversations?.length ?? 0)
    .reduce((sum, n) => sum + n, 0);
}

function logPath(owner: string, id: string, workspaceId = ws): string {
  return join(instance.root, workspaceId, "conversations", owner, `${id}.jsonl`);
}

async function call(client: Client, name: string, args: Record<string, unknown>) {
  return client.callTool({ name: `conversations__${name}`, arguments: args });
}

beforeAll(async () => {
  instance = await startTestAtrium({
    clock: time.clock,
    timers: time.timers,
    sections: {
      conversations: { maxEventBytes: MAX_EVENT_BYTES, maxConversationBytes: MAX_CONVERSATION_BYTES },
    },
  });
  ws = await bootstrapWorkspace(instance, "alice");
  await addMember(instance.rest, "alice", ws, "bob", { principalId: bobId });
});

afterAll(async () => {
  await instance?.stop();
});

describe("a conversation written through MCP", () => {
  it.each(MCP_ERAS)("is read back over REST, by id in its workspace and by bare id (%s)", async (era) => {
    time.jump(1000);
    const alice = await instance.mcpClient("alice", ws, { era });
    const created = await call(alice, "create", { title: `Trip ${era}` });
    expect(created.isError).toBeFalsy();
    const { id } = (created.structuredContent as { conversation: ConversationSummary }).conversation;
    expect(id).toMatch(/^cv_[0-9a-f]{24}$/);
    const appended = await call(alice, "append", {
      id,
      events: [
        text("user", "Where should we go?"),
        {
          type: "message",
          role: "assistant",
          content: [{ type: "tool_call", id: "c1", name: "maps__find", arguments: { q: "lisbon" } }],
        },
        {
          type: "message",
          role: "tool",
          content: [{ type: "tool_result", toolCallId: "c1", content: "Lisbon, Portugal" }],
        },
        text("assistant", "Lisbon."),
      ],
    });
    expect(appended.isError).toBeFalsy();
    const page = await get("alice", id);
    expect(page.conversation).toMatchObject({ id, title: `Trip ${era}`, messageCount: 4, eventCount: 5 });
    expect(page.events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(page.events[1]).toMatchObject({
      type: "message",
      role: "user",
      content: [{ type: "text", text: "Where should we go?" }],
    });
    const bare = await json<GetPage>(
      await instance.rest("alice", "GET", `/v1/conversations/${id}?order=newest&limit=2`),
      200,
    );
    expect(bare.events.map((e) => e.seq)).toEqual([5, 4]);
    const next = await json<GetPage>(
      await instance.rest(
        "alice",
        "GET",
        `/v1/conversations/${id}?order=newest&limit=2&cursor=${bare.nextCursor}`,
      ),
      200,
    );
    expect(next.events.map((e) => e.seq)).toEqual([3, 2]);
    const listed = await json<{ conversations: ConversationSummary[] }>(
      await instance.rest("alice", "GET", `/v1/workspaces/${ws}/conversations`),
      200,
    );
    expect(listed.conversations[0]).toMatchObject({ id, title: `Trip ${era}`, messageCount: 4 });
  });

  it("is retitled, listed most recently updated first, paged by cursor, and deleted", async () => {
    const first = await create("alice", { title: "first" });
    time.jump(1000);
    const second = await create("alice", { title: "second" });
    time.jump(1000);
    const renamed = await json<{ conversation: ConversationSummary }>(
      await instance.rest("alice", "PATCH", `/v1/workspaces/${ws}/conversations/${first.id}`, {
        title: "first, renamed",
      }),
      200,
    );
    expect(renamed.conversation.title).toBe("first, renamed");
    const page1 = await json<{ conversations: ConversationSummary[]; nextCursor: string }>(
      await instance.rest("alice", "GET", `/v1/workspaces/${ws}/conversations?limit=1`),
      200,
    );
    expect(page1.conversations.map((c) => c.id)).toEqual([first.id]);
    const page2 = await json<{ conversations: ConversationSummary[] }>(
      await instance.rest(
        "alice",
        "GET",
        `/v1/workspaces/${ws}/conversations?limit=1&cursor=${page1.nextCursor}`,
      ),
      200,
    );
    expect(page2.conversations.map((c) => c.id)).toEqual([second.id]);
    await json(
      await instance.rest("alice", "DELETE", `/v1/workspaces/${ws}/conversations/${second.id}`),
      204,
    );
    await json(await instance.rest("alice", "GET", `/v1/workspaces/${ws}/conversations/${second.id}`), 404);
    await json(await instance.rest("alice", "GET", `/v1/conversations/${second.id}`), 404);
    const after = await json<{ conversations: ConversationSummary[] }>(
      await instance.rest("alice", "GET", `/v1/workspaces/${ws}/conversations?limit=1000`),
      200,
    );
    expect(after.conversations.map((c) => c.id)).not.toContain(second.id);
  });
});

describe("another member of the workspace", () => {
  it("cannot read, list, search, fork, change or learn of it: the same answer as a conversation that does not exist", async () => {
    const stream = new SseReader(await instance.rest("bob", "GET", `/v1/workspaces/${ws}/events`));
    await stream.next();
    const secret = await create("alice", {
      title: "Alice's secret",
      events: [text("user", "the password is swordfish")],
    });
    const missing = `cv_${"0".repeat(24)}`;
    const answers = async (id: string) => [
      await (await instance.rest("bob", "GET", `/v1/workspaces/${ws}/conversations/${id}`)).text(),
      await (await instance.rest("bob", "GET", `/v1/conversations/${id}`)).text(),
      await (await instance.rest("bob", "GET", `/v1/workspaces/${ws}/conversations/${id}/export`)).text(),
      await (await instance.rest("bob", "POST", `/v1/workspaces/${ws}/conversations/${id}/fork`, {})).text(),
      await (await append("bob", id, [text("user", "hi")])).text(),
      await (
        await instance.rest("bob", "PATCH", `/v1/workspaces/${ws}/conversations/${id}`, { title: "x" })
      ).text(),
      await (await instance.rest("bob", "DELETE", `/v1/workspaces/${ws}/conversations/${id}`)).text(),
    ];
    expect(await answers(secret.id)).toEqual(await answers(missing));
    expect(JSON.parse((await answers(secret.id))[0] as string)).toEqual({
      error: { code: "conversation_not_found", message: "No conversation with that id that you can reach." },
    });
    const bob = await instance.mcpClient("bob", ws);
    for (const [tool, args] of [
      ["get", {}],
      ["fork", {}],
      ["export", {}],
      ["append", { events: [text("user", "hi")] }],
      ["delete", {}],
    ] as const) {
      const mine = await call(bob, tool, { id: secret.id, ...args });
      const none = await call(bob, tool, { id: missing, ...args });
      expect(mine.isError, tool).toBe(true);
      expect(mine.content, tool).toEqual(none.content);
    }
    const listed = await call(bob, "list", {});
    expect(JSON.stringify(listed.structuredContent)).not.toContain(secret.id);
    expect((await search("bob", "swordfish")).results).toEqual([]);
    expect((await search("alice", "swordfish")).results.map((r) => r.conversation.id)).toEqual([secret.id]);
    // Bob's stream never carried Alice's conversation: his own next event is his own create.
    const own = await create("bob", { title: "bob's" });
    const event = await stream.nextEvent();
    expect(event).toMatchObject({ event: "conversation.created", data: { conversation: { id: own.id } } });
    await stream.close();
    // Alice still has it, untouched by Bob's attempts.
    expect((await get("alice", secret.id)).conversation).toMatchObject({
      title: "Alice's secret",
      eventCount: 2,
    });
  });

  it("by bare id reaches the owner only while they are a member of its workspace", async () => {
    const carlId = testPrincipal("carl").id;
    await addMember(instance.rest, "alice", ws, "carl", { principalId: carlId });
    const mine = await create("carl", { title: "carl's" });
    await json(await instance.rest("carl", "GET", `/v1/conversations/${mine.id}`), 200);
    const aliceAsks = await instance.rest("alice", "GET", `/v1/conversations/${mine.id}`);
    const nobodys = await instance.rest("alice", "GET", `/v1/conversations/cv_${"f".repeat(24)}`);
    expect(aliceAsks.status).toBe(404);
    expect(await aliceAsks.text()).toBe(await nobodys.text());
    await json(await instance.rest("alice", "DELETE", `/v1/workspaces/${ws}/members/${carlId}`), 204);
    await json(await instance.rest("carl", "GET", `/v1/conversations/${mine.id}`), 404);
  });

  it("announces created, updated and deleted to the owner alone", async () => {
    const stream = new SseReader(await instance.rest("alice", "GET", `/v1/workspaces/${ws}/events`));
    await stream.next();
    const c = await create("alice", { title: "announced" });
    await json(await append("alice", c.id, [text("user", "one")]), 200);
    await json(await instance.rest("alice", "DELETE", `/v1/workspaces/${ws}/conversations/${c.id}`), 204);
    const frames = [await stream.nextEvent(), await stream.nextEvent(), await stream.nextEvent()];
    expect(frames.map((f) => f?.event)).toEqual([
      "conversation.created",
      "conversation.updated",
      "conversation.deleted",
    ]);
    expect(frames[1]?.data).toMatchObject({
      change: "appended",
      conversation: { id: c.id, messageCount: 1 },
    });
    expect(frames[2]?.data).toEqual({ workspaceId: ws, conversationId: c.id });
    // The event says what changed, never what was said.
    expect(JSON.stringify(frames)).not.toContain('"one"');
    await stream.close();
  });
});

describe("a fork", () => {
  it("keeps the prefix up to the seq it names and not the rest, and records where it came from", async () => {
    const source = await create("alice", {
      title: "source",
      events: [text("user", "kept one"), text("assistant", "kept two"), text("user", "dropped three")],
    });
    const alice = await instance.mcpClient("alice", ws);
    const result = await call(alice, "fork", { id: source.id, throughSeq: 3, title: "the fork" });
    const fork = (result.structuredContent as { conversation: ConversationSummary }).conversation;
    expect(fork).toMatchObject({
      title: "the fork",
      messageCount: 2,
      forkOf: { conversationId: source.id, seq: 3 },
    });
    const { events } = await get("alice", fork.id);
    const texts = events.flatMap((e) =>
      e.type === "message" ? e.content.map((b) => (b.type === "text" ? b.text : "")) : [],
    );
    expect(texts).toEqual(["kept one", "kept two"]);
    expect(events.map((e) => e.type)).toEqual(["title", "message", "message", "fork", "title"]);
    // The original is unchanged, and the fork goes on by itself.
    await json(await append("alice", fork.id, [text("user", "fork only")]), 200);
    expect((await get("alice", source.id)).conversation.eventCount).toBe(4);
    for (const throughSeq of [0, 5, 1.5]) {
      const bad = await instance.rest(
        "alice",
        "POST",
        `/v1/workspaces/${ws}/conversations/${source.id}/fork`,
        { throughSeq },
      );
      expect(bad.status, String(throughSeq)).toBe(400);
    }
  });
});

describe("the log on disk", () => {
  it("tolerates a torn last line, and the next append repairs it", async () => {
    const c = await create("alice", { title: "torn", events: [text("user", "whole line")] });
    const path = logPath(aliceId, c.id);
    const whole = await readFile(path, "utf8");
    // A crash mid-append: part of a line, no newline.
    await appendFile(path, '{"seq":3,"at":"2026-01-01T00:00:00.000Z","type":"message","role":"us');
    const read = await get("alice", c.id);
    expect(read.conversation.eventCount).toBe(2);
    expect(read.events.map((e) => e.seq)).toEqual([1, 2]);
    await json(await append("alice", c.id, [text("assistant", "after the tear")]), 200);
    const repaired = await readFile(path, "utf8");
    expect(repaired.startsWith(whole)).toBe(true);
    expect(repaired.endsWith("\n")).toBe(true);
    expect(repaired).not.toContain('"role":"us"');
    expect(
      repaired
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line).seq),
    ).toEqual([1, 2, 3]);
    expect((await get("alice", c.id)).events.map((e) => e.seq)).toEqual([1, 2, 3]);
  });

  it("keeps every append when two clients append at once", async () => {
    const c = await create("alice", { title: "busy" });
    const clients = [
      await instance.mcpClient("alice", ws),
      await instance.mcpClient("alice", ws, { era: "2026-07-28" }),
    ];
    const results = await Promise.all(
      clients.flatMap((client, k) =>
        Array.from({ length: 20 }, (_, i) =>
          call(client, "append", { id: c.id, events: [text("user", `client ${k} message ${i}`)] }),
        ),
      ),
    );
    expect(results.filter((r) => r.isError)).toEqual([]);
    const { events, conversation } = await get("alice", c.id, "?limit=1000");
    expect(conversation.messageCount).toBe(40);
    expect(events.map((e) => e.seq)).toEqual(Array.from({ length: 41 }, (_, i) => i + 1));
    const said = events.flatMap((e) =>
      e.type === "message" && e.content[0]?.type === "text" ? [e.content[0].text] : [],
    );
    expect(new Set(said).size).toBe(40);
  });
});

describe("references and limits", () => {
  it("refuses a reference to another person's file and writes nothing; accepts the caller's own", async () => {
    const upload = (user: string) =>
      instance.rest(user, "POST", `/v1/workspaces/${ws}/files?name=n.txt`, "hello", {
        "content-type": "text/plain",
      });
    const bobs = await json<{ id: string }>(await upload("bob"), 201);
    const alices = await json<{ id: string }>(await upload("alice"), 201);
    const c = await create("alice", { title: "refs" });
    const before = await stat(logPath(aliceId, c.id));
    const refused = await append("alice", c.id, [
      { type: "message", role: "user", content: [{ type: "file", fileId: bobs.id }] },
    ]);
    const body = await json<{ error: { message: string } }>(refused, 400);
    expect(body.error.message).toContain(`${bobs.id} is not one of your files in this workspace`);
    expect((await stat(logPath(aliceId, c.id))).size).toBe(before.size);
    const alice = await instance.mcpClient("alice", ws);
    const viaMcp = await call(alice, "create", {
      events: [{ type: "message", role: "user", content: [{ type: "file", fileId: bobs.id }] }],
    });
    expect(viaMcp.isError).toBe(true);
    await json(
      await append("alice", c.id, [
        { type: "message", role: "user", content: [{ type: "file", fileId: alices.id }] },
      ]),
      200,
    );
    expect((await get("alice", c.id)).conversation.messageCount).toBe(1);
  });

  it("refuses an event over maxEventBytes and an append past maxConversationBytes, with nothing written", async () => {
    const c = await create("alice", { title: "limits" });
    const path = logPath(aliceId, c.id);
    const size = async () => (await stat(path)).size;
    const before = await size();
    const big = await append("alice", c.id, [
      text("user", "small"),
      text("user", "x".repeat(MAX_EVENT_BYTES)),
    ]);
    const bigBody = await json<{ error: { code: string; message: string } }>(big, 413);
    expect(bigBody.error).toMatchObject({ code: "event_too_large" });
    expect(bigBody.error.message).toContain("conversations.maxEventBytes");
    expect(await size()).toBe(before);
    // Fill it close to the limit, then one append too many.
    const chunk = Array.from({ length: 17 }, () => text("user", "y".repeat(3500)));
    await json(await append("alice", c.id, chunk), 200);
    const full = await size();
    const over = await append("alice", c.id, [
      text("user", "z".repeat(3500)),
      text("user", "z".repeat(3500)),
    ]);
    expect((await json<{ error: { code: string } }>(over, 413)).error.code).toBe("conversation_too_large");
    expect(await size()).toBe(full);
    expect((await get("alice", c.id)).conversation.messageCount).toBe(17);
  });

  it("answers bad input with 400 and a message, and writes nothing", async () => {
    const c = await create("alice", { title: "bad input" });
    const path = `/v1/workspaces/${ws}/conversations`;
    const cases: Array<[string, string, unknown]> = [
      ["POST", `${path}/${c.id}/events`, { events: [] }],
      [
        "POST",
        `${path}/${c.id}/events`,
        { events: [{ type: "message", role: "robot", content: [{ type: "text", text: "x" }] }] },
      ],
      [
        "POST",
        `${path}/${c.id}/events`,
        { events: [{ type: "fork", from: { conversationId: c.id, seq: 1 } }] },
      ],
      [
        "POST",
        `${path}/${c.id}/events`,
        { events: [{ type: "message", role: "user", content: [{ type: "file", fileId: "../x" }] }] },
      ],
      ["POST", path, { title: "bad\u0007title" }],
      ["PATCH", `${path}/${c.id}`, {}],
      ["GET", `${path}?limit=0`, undefined],
      ["GET", `${path}?cursor=nope`, undefined],
      ["GET", `${path}/${c.id}?order=sideways`, undefined],
      ["GET", `${path}/${c.id}?cursor=bm9wZQ`, undefined],
      ["GET", `${path}/search`, undefined],
      ["GET", `${path}/search?query=${encodeURIComponent("?!")}`, undefined],
      ["GET", `${path}/search?query=apple&cursor=bm9wZQ`, undefined],
      ["GET", `${path}/${c.id}/export?format=pdf`, undefined],
    ];
    for (const [method, url, body] of cases) {
      const response = await instance.rest("alice", method, url, body as Record<string, unknown> | undefined);
      expect(response.status, `${method} ${url}`).toBe(400);
      expect(
        ((await response.json()) as { error: { message: string } }).error.message.length,
      ).toBeGreaterThan(0);
    }
    const raw = await instance.rest("alice", "POST", `${path}/${c.id}/events`, "not json", {
      "content-type": "application/json",
    });
    expect(raw.status).toBe(400);
    expect((await get("alice", c.id)).conversation.eventCount).toBe(1);
    await json(await instance.rest("alice", "GET", `${path}/cv_nope`), 404);
  });

  it("refuses one conversation's event cursor for another, rather than skip events by its seq", async () => {
    const say = (text: string) => ({ type: "message", role: "user", content: [{ type: "text", text }] });
    const a = await create("alice", { title: "a" });
    const b = await create("alice", { title: "b" });
    for (const id of [a.id, b.id])
      expect((await append("alice", id, [say("1"), say("2"), say("3")])).status).toBe(200);
    const first = await get("alice", a.id, "?limit=2");
    expect(first.nextCursor).toBeDefined();
    expect(
      (await get("alice", a.id, `?limit=2&cursor=${first.nextCursor}`)).events.map((e) => e.seq),
    ).toEqual([3, 4]);
    const crossed = await instance.rest(
      "alice",
      "GET",
      `/v1/workspaces/${ws}/conversations/${b.id}?cursor=${first.nextCursor}`,
    );
    expect(crossed.status).toBe(400);
  });

  it("says what is wrong with a title: a control character is not called half a surrogate pair", async () => {
    const c = await create("alice", { title: "titled" });
    const path = `/v1/workspaces/${ws}/conversations/${c.id}`;
    const newline = await instance.rest("alice", "PATCH", path, { title: "two\nlines" });
    expect(newline.status).toBe(400);
    const told = ((await newline.json()) as { error: { message: string } }).error.message;
    expect(told).toContain("no control characters");
    expect(told).not.toContain("surrogate");
    const half = await instance.rest("alice", "PATCH", path, { title: "half \ud800" });
    expect(half.status).toBe(400);
    expect(((await half.json()) as { error: { message: string } }).error.message).toContain("surrogate");
  });
});

describe("a search query", () => {
  it("refuses a query with a word longer than 64 characters, naming the limit, over REST and MCP", async () => {
    // Such a word was dropped from the query, which then matched conversations without it.
    const zebra = await create("alice", { title: "zebra only", events: [text("user", "a zebra")] });
    expect((await search("alice", "zebra")).results.map((r) => r.conversation.id)).toContain(zebra.id);
    const path = `/v1/workspaces/${ws}/conversations/search?query=`;
    for (const query of [`zebra ${"a".repeat(65)}`, "b".repeat(65), `ｚｅｂｒａ ${"Ｃ".repeat(65)}`]) {
      const refused = await json<{ error: { code: string; message: string } }>(
        await instance.rest("alice", "GET", `${path}${encodeURIComponent(query)}`),
        400,
      );
      expect(refused.error.code).toBe("invalid_input");
      expect(refused.error.message).toContain("up to 64");
      expect(refused.error.message).toContain("Leave it out");
    }
    const alice = await instance.mcpClient("alice", ws);
    const viaMcp = await call(alice, "search", { query: `zebra ${"a".repeat(65)}` });
    expect(viaMcp.isError).toBe(true);
    expect(JSON.stringify(viaMcp.content)).toContain("up to 64");
    // 64 is a word: a SHA-256 in hex is found.
    const hash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    const hashed = await create("alice", { title: "digest", events: [text("user", `digest ${hash}`)] });
    expect((await search("alice", hash.toUpperCase())).results.map((r) => r.conversation.id)).toEqual([
      hashed.id,
    ]);
  });
  it("refuses a query of more than 16 distinct words, naming the limit, over REST and MCP", async () => {
    // Each word's postings are walked: 250 one-letter words walked every posting of a full
    // partition at each search (adr/0115). Cut, not refused, a query would match conversations
    // without the words left out.
    const words = Array.from({ length: 17 }, (_, n) => `w${n}`);
    const held = await create("alice", { title: "many words", events: [text("user", words.join(" "))] });
    const sixteen = `${words.slice(0, 16).join(" ")} W0 w1`;
    expect((await search("alice", sixteen)).results.map((r) => r.conversation.id)).toEqual([held.id]);
    const refused = await json<{ error: { code: string; message: string } }>(
      await instance.rest(
        "alice",
        "GET",
        `/v1/workspaces/${ws}/conversations/search?query=${encodeURIComponent(words.join(" "))}`,
      ),
      400,
    );
    expect(refused.error.code).toBe("invalid_input");
    expect(refused.error.message).toContain("17 distinct words");
    expect(refused.error.message).toContain("at most 16");
    const alice = await instance.mcpClient("alice", ws);
    const viaMcp = await call(alice, "search", { query: words.join(" ") });
    expect(viaMcp.isError).toBe(true);
    expect(JSON.stringify(viaMcp.content)).toContain("at most 16");
  });
});

describe("export", () => {
  it("round-trips the text, as Markdown and as JSON", async () => {
    const words = [
      "Plain words.",
      "Markdown that must survive: # not a heading, *not emphasis*, ```not a fence```, <b>not html</b>",
      "Unicode: ünïcödé, 日本語, emoji 🎉\nand a second line",
    ];
    const c = await create("alice", {
      title: "export me",
      events: words.map((w, i) => text(i % 2 ? "assistant" : "user", w)),
    });
    const markdown = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/conversations/${c.id}/export`);
    expect(markdown.headers.get("content-type")).toContain("text/markdown");
    const md = await markdown.text();
    expect(md.startsWith("# export me\n")).toBe(true);
    for (const w of words) expect(md).toContain(w);
    const exported = await json<JsonExport>(
      await instance.rest("alice", "GET", `/v1/workspaces/${ws}/conversations/${c.id}/export?format=json`),
      200,
    );
    // Import is create with the exported events: the copy exports the same text.
    const drafts = exported.events.flatMap((e) =>
      e.type === "message" ? [{ type: e.type, role: e.role, content: e.content }] : [],
    );
    const copy = await create("alice", { title: exported.conversation.title, events: drafts });
    const again = await json<JsonExport>(
      await instance.rest("alice", "GET", `/v1/workspaces/${ws}/conversations/${copy.id}/export?format=json`),
      200,
    );
    const texts = (e: JsonExport) => e.events.flatMap((ev) => (ev.type === "message" ? ev.content : []));
    expect(texts(again)).toEqual(texts(exported));
    expect(texts(again).map((b) => (b.type === "text" ? b.text : ""))).toEqual(words);
    const alice = await instance.mcpClient("alice", ws);
    const viaMcp = await call(alice, "export", { id: c.id });
    expect((viaMcp.structuredContent as { markdown: string }).markdown).toBe(md);
  });
});

describe("search among 1,000 conversations", () => {
  const COUNT = 1000;
  let sw: string;
  let needle: ConversationSummary;

  beforeAll(async () => {
    // A workspace of its own, so the count is exact.
    sw = await bootstrapWorkspace(instance, "searcher");
    const ids = await mapBounded(
      Array.from({ length: COUNT }, (_, i) => i),
      8,
      async (i) => {
        const events = [
          text("user", `conversation number ${i} about ordinary things`),
          text("assistant", "noted"),
        ];
        if (i === 7) events.unshift(text("user", "the old message mentions a quetzal"));
        return create("searcher", { title: `c${i}`, events }, sw);
      },
    );
    needle = ids[7] as ConversationSummary;
    // A thousand creates, each flushed to disk: minutes on a loaded machine, not the hook's 30 s.
  }, 300_000);

  it("finds a word in an old message from the index, reading only the log it returns", async () => {
    const found = await search("searcher", "Quetzal", sw);
    expect(found.results.map((r) => r.conversation.id)).toEqual([needle.id]);
    expect(found.results[0]?.events).toEqual([
      expect.objectContaining({
        seq: 2,
        content: [{ type: "text", text: "the old message mentions a quetzal" }],
      }),
    ]);
    expect(found.index).toEqual({ conversations: COUNT, logsRead: 1, partial: 0 });
    // Within its budget of postings (adr/0120): every match, and it says so.
    expect(found.truncated).toBe(false);
    const both = await search("searcher", "ordinary 999", sw);
    expect(both.results.map((r) => r.conversation.title)).toEqual(["c999"]);
    expect((await search("searcher", "nowhere", sw)).results).toEqual([]);
  });

  it("is saved as a snapshot, trusted after a restart, caught up when behind and rebuilt when missing", async () => {
    const snapshot = join(instance.root, sw, "conversations", testPrincipal("searcher").id, SNAPSHOT_FILE);
    await time.advance(SNAPSHOT_DELAY_MS);
    await eventually(async () => expect(await snapshotConversations(snapshot)).toBe(COUNT));
    instance = await instance.restart();
    expect((await search("searcher", "quetzal", sw)).index).toEqual({
      conversations: COUNT,
      logsRead: 1,
      partial: 0,
    });

    // Behind: a log grew after the snapshot was saved (a crash between an append and the next
    // save): the load reads that one log from where the snapshot stopped.
    await instance.close();
    const late = { seq: 5, at: new Date(time.clock() + 1).toISOString(), ...text("user", "a late axolotl") };
    await appendFile(logPath(testPrincipal("searcher").id, needle.id, sw), `${JSON.stringify(late)}\n`);
    instance = await instance.restart();
    const caughtUp = await search("searcher", "axolotl", sw);
    expect(caughtUp.results.map((r) => r.conversation)).toEqual([
      expect.objectContaining({ id: needle.id, messageCount: 4, eventCount: 5 }),
    ]);
    expect(caughtUp.index).toEqual({ conversations: COUNT, logsRead: 2, partial: 0 });

    // A graceful stop saves what changed since the last save: the next start reads no log for it.
    await json(
      await instance.rest("searcher", "POST", `/v1/workspaces/${sw}/conversations/${needle.id}/events`, {
        events: [text("assistant", "an okapi before the stop")],
      }),
      200,
    );
    instance = await instance.restart();
    const saved = await search("searcher", "okapi", sw);
    expect(saved.results.map((r) => r.conversation.id)).toEqual([needle.id]);
    expect(saved.index).toEqual({ conversations: COUNT, logsRead: 1, partial: 0 });

    // Missing: every log is read once, and the index is whole again.
    await time.advance(SNAPSHOT_DELAY_MS);
    await eventually(async () => expect(await readFile(snapshot, "utf8")).toContain("axolotl"));
    await rm(snapshot);
    instance = await instance.restart();
    const rebuilt = await search("searcher", "quetzal", sw);
    expect(rebuilt.index).toEqual({ conversations: COUNT, logsRead: COUNT + 1, partial: 0 });
    await time.advance(SNAPSHOT_DELAY_MS);
    await eventually(async () => expect(await snapshotConversations(snapshot)).toBe(COUNT));
    const listed = await json<{ conversations: ConversationSummary[] }>(
      await instance.rest("searcher", "GET", `/v1/workspaces/${sw}/conversations?limit=3`),
      200,
    );
    expect(listed.conversations[0]?.id).toBe(needle.id);
  });

  it("does not trust a snapshot that says more than a log holds", async () => {
    const snapshot = join(instance.root, sw, "conversations", testPrincipal("searcher").id, SNAPSHOT_FILE);
    await time.advance(SNAPSHOT_DELAY_MS);
    await eventually(async () => expect((await stat(snapshot)).size).toBeGreaterThan(0));
    await instance.close();
    // The needle's log loses its last two events (restored from an older copy, say).
    const path = logPath(testPrincipal("searcher").id, needle.id, sw);
    const lines = (await readFile(path, "utf8")).split("\n").filter(Boolean);
    await truncate(path, Buffer.byteLength(`${lines.slice(0, -2).join("\n")}\n`));
    instance = await instance.restart();
    expect((await search("searcher", "axolotl", sw)).results).toEqual([]);
    expect((await search("searcher", "okapi", sw)).results).toEqual([]);
    expect((await search("searcher", "quetzal", sw)).results.map((r) => r.conversation.id)).toEqual([
      needle.id,
    ]);
  });
});
