import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { NotFound, PayloadTooLarge } from "../../../../src/errors.ts";
import type { AtriumEvent } from "../../../../src/kernel/events.ts";
import { FileStore } from "../../../../src/platform/files/store.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { FakeTime } from "../../../helpers/fake-time.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

const ALICE = "usr_aaaaaaaaaaaaaaaaaaaaaaaa";
const MAX_BYTES = 16;

let temp: TempRoot;
let files: FileStore;
let ws: string;
let time: FakeTime;
let published: AtriumEvent[];

beforeEach(async () => {
  temp = await openTempRoot("file-events", ALICE);
  const { layout, events } = temp;
  ws = temp.ws;
  time = new FakeTime();
  files = new FileStore(layout.partition("files"), MAX_BYTES, events, time.clock);
  published = [];
  events.subscribe({ types: ["file.created", "file.deleted"] }, (event) => void published.push(event));
});

afterEach(async () => {
  await temp.remove();
});

const body = (text: string) => new Response(text).body;

describe("FileStore events", () => {
  it("a write publishes one file.created, private to its owner, stamped by the injected clock", async () => {
    const meta = await files.write(
      ws,
      ALICE,
      { name: "a.txt", mimeType: "text/plain" },
      Buffer.from("hello"),
      NO_CALLER,
    );
    expect(meta.createdAt).toBe(new Date(time.clock()).toISOString());
    expect(published).toEqual([
      {
        type: "file.created",
        workspaceId: ws,
        ownerId: ALICE,
        file: { id: meta.id, name: "a.txt", mimeType: "text/plain", size: 5, createdAt: meta.createdAt },
      },
    ]);
  });

  it("an upload publishes one file.created; an oversized one, or a bad name, publishes none", async () => {
    await expect(
      files.upload(ws, ALICE, { name: "big.bin" }, body("x".repeat(MAX_BYTES + 1)), NO_CALLER),
    ).rejects.toBeInstanceOf(PayloadTooLarge);
    await expect(
      files.write(ws, ALICE, { name: "big.bin" }, Buffer.alloc(MAX_BYTES + 1), NO_CALLER),
    ).rejects.toBeInstanceOf(PayloadTooLarge);
    await expect(files.write(ws, ALICE, { name: "" }, Buffer.from("x"), NO_CALLER)).rejects.toThrow(
      /file name/,
    );
    expect(published).toEqual([]);
    const meta = await files.upload(ws, ALICE, { name: "ok.bin" }, body("ok"), NO_CALLER);
    expect(published.map((e) => e.type)).toEqual(["file.created"]);
    expect(published[0]).toMatchObject({ workspaceId: ws, ownerId: ALICE, file: { id: meta.id, size: 2 } });
  });

  it("a delete publishes one file.deleted; deleting a missing file publishes none", async () => {
    const meta = await files.write(ws, ALICE, { name: "a.txt" }, Buffer.from("x"), NO_CALLER);
    published.length = 0;
    await files.delete(ws, ALICE, meta.id, NO_CALLER);
    expect(published).toEqual([{ type: "file.deleted", workspaceId: ws, ownerId: ALICE, fileId: meta.id }]);
    await expect(files.delete(ws, ALICE, meta.id, NO_CALLER)).rejects.toBeInstanceOf(NotFound);
    expect(published).toHaveLength(1);
  });
});
