import { describe, expect, it } from "vitest";
import { ConnectCut } from "../../../src/sources/connect-cut.ts";

// A remote client's connect is ended by ConnectCut (test/integration/connections-races.test.ts
// shows it against a real server); these pin which requests it ties, and for how long.

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

  it("keeps a connect-time request tied after the connect settled, and passes later requests as they are", async () => {
    const sent: Sent[] = [];
    const cut = new ConnectCut();
    const fetch = cut.fetch(recordingFetch(sent));
    const client = new AbortController();
    // A 2025 server's event stream: opened during the connect, never awaited by it.
    const stream = fetch("http://127.0.0.1:1/mcp", { method: "GET", signal: client.signal });
    cut.settled();
    for (let i = 0; i < 3; i++)
      void fetch("http://127.0.0.1:1/mcp", { signal: client.signal }).catch(() => undefined);
    expect(sent.slice(1).map((request) => request.signal)).toEqual([
      client.signal,
      client.signal,
      client.signal,
    ]);
    // The client's own close still ends it.
    client.abort(new Error("client closed"));
    await expect(stream).rejects.toThrow("client closed");
  });

  it("still cuts a connect-time request that outlived the connect", async () => {
    const cut = new ConnectCut();
    const stream = cut.fetch(recordingFetch([]))("http://127.0.0.1:1/mcp", {
      signal: new AbortController().signal,
    });
    cut.settled();
    cut.abort(new Error("closed now"));
    await expect(stream).rejects.toThrow("closed now");
  });
});
