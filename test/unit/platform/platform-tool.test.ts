import { describe, expect, it } from "vitest";
import * as z from "zod";
import { addInput, authorizeBody } from "../../../src/platform/connections/server.ts";
import { eventDrafts } from "../../../src/platform/conversations/model.ts";
import { ackInput } from "../../../src/platform/notifications/server.ts";
import { boundedArray, platformInput } from "../../../src/platform/platform-tool.ts";
import { createInput } from "../../../src/platform/skills/write-tools.ts";

async function messagesOf(
  schema: { "~standard": { validate: (value: unknown) => unknown } },
  value: unknown,
) {
  const result = (await schema["~standard"].validate(value)) as { issues?: { message: string }[] };
  return result.issues?.map((issue) => issue.message) ?? [];
}

// zod reads every item of an array before its `max`: 1,000,000 numbers where strings belong
// made as many issues and a 66 MB refusal (ADR 0157).
describe("a platform tool's bounded list", () => {
  const input = platformInput({ tags: boundedArray(z.string(), 3, 1) });

  it("is refused by its length, one line, before any item is read", async () => {
    expect(await messagesOf(input, { tags: new Array(100_000).fill(0) })).toEqual([
      "Too big: expected array to have <=3 items at tags",
    ]);
  });

  it("checks its items and its least length as a zod array does", async () => {
    expect(await messagesOf(input, { tags: ["a", 1] })).toEqual([
      "Invalid input: expected string, received number at tags[1]",
    ]);
    expect(await messagesOf(input, { tags: [] })).toEqual([
      "Too small: expected array to have >=1 items at tags",
    ]);
    expect(await input["~standard"].validate({ tags: ["a", "b", "c"] })).toEqual({
      value: { tags: ["a", "b", "c"] },
    });
  });

  it("is listed as an array of its items with its bounds", () => {
    const listed = input["~standard"].jsonSchema.input({ target: "draft-07" }) as {
      properties: Record<string, unknown>;
    };
    expect(listed.properties.tags).toEqual({
      type: "array",
      items: { type: "string" },
      minItems: 1,
      maxItems: 3,
    });
  });
});

describe("the platform tools' lists", () => {
  const many = new Array(100_000).fill(0);

  it("refuse a list of scopes or ids past their bound by its length", async () => {
    const auth = { kind: "oauth", scopes: many };
    expect(await messagesOf(addInput, { name: "a", url: "https://a.example/mcp", auth })).toEqual([
      "Too big: expected array to have <=50 items at auth.scopes",
    ]);
    expect(await messagesOf(authorizeBody, { scopes: many })).toEqual([
      "Too big: expected array to have <=50 items at scopes",
    ]);
    expect(await messagesOf(ackInput, { ids: many })).toEqual([
      "Too big: expected array to have <=100 items at ids",
    ]);
  });

  it("refuse a conversation's events, a message's content or a skill's tools past their bound by its length", async () => {
    const append = platformInput({ events: eventDrafts });
    expect(await messagesOf(append, { events: many })).toEqual([
      "Too big: expected array to have <=1000 items at events",
    ]);
    const message = { type: "message", role: "user", content: many };
    expect(await messagesOf(append, { events: [message] })).toEqual([
      "Too big: expected array to have <=1000 items at events[0].content",
    ]);
    expect(await messagesOf(createInput, { name: "a", description: "d", body: "b", tools: many })).toEqual([
      "Too big: expected array to have <=64 items at tools",
    ]);
  });
});
