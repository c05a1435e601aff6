import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { ConnectCut } from "../../../src/sources/connect-cut.ts";

// A remote client's connect is ended by ConnectCut (test/integration/connections-races.test.ts
// shows it against a real server); these pin that nothing of it outlives the connect.

type Sent = { url: string | URL; signal: AbortSignal | undefined };

function recordingFetch(sent: Sent[]) {
  return (url: string | URL, init?: RequestInit) => {
    sent.push({ url, signal: init?.signal ?? undefined });
    return new Promise<Response>((_resolve, reject) =>
      init?.signal?.addEventListener("abort", () => reject(init.signal?.reason), { once: true }),
    );
  };
}

describe("ConnectCut", () => {
  it("ends a request the connect made, whatever signal the client gave it", async () => {
    const sent: Sent[] = [];
    const cut = new ConnectCut();
    const client = new AbortController();
    const request = cut.fetch(recordingFetch(sent))("http://127.0.0.1:1/mcp", { signal: client.signal });
    const reason = new Error("closed");
    cut.abort(reason);
    await expect(request).rejects.toBe(reason);
    // The client's own abort still ends a request too.
    const other = new ConnectCut();
    const mine = new AbortController();
    const second = other.fetch(recordingFetch(sent))("http://127.0.0.1:1/mcp", { signal: mine.signal });
    mine.abort(new Error("client closed"));
    await expect(second).rejects.toThrow("client closed");
  });

  it("sends nothing once cut", async () => {
    const sent: Sent[] = [];
    const cut = new ConnectCut();
    cut.abort(new Error("closed"));
    await expect(cut.fetch(recordingFetch(sent))("http://127.0.0.1:1/mcp")).rejects.toThrow("closed");
    expect(sent).toEqual([]);
  });

  it("leaves no listener behind once the connect settled, and passes later requests as they are", async () => {
    const sent: Sent[] = [];
    const cut = new ConnectCut();
    const fetch = cut.fetch(recordingFetch(sent));
    const client = new AbortController();
    void fetch("http://127.0.0.1:1/mcp", { signal: client.signal }).catch(() => undefined);
    expect(getEventListeners(client.signal, "abort")).toHaveLength(1);
    cut.settled();
    expect(getEventListeners(client.signal, "abort")).toHaveLength(0);
    for (let i = 0; i < 3; i++)
      void fetch("http://127.0.0.1:1/mcp", { signal: client.signal }).catch(() => undefined);
    expect(sent.slice(1).map((request) => request.signal)).toEqual([
      client.signal,
      client.signal,
      client.signal,
    ]);
    client.abort();
  });
});
