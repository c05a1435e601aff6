import {
  type JSONRPCMessage,
  type MessageExtraInfo,
  Server,
  type TransportSendOptions,
} from "@modelcontextprotocol/server";
import { describe, expect, it } from "vitest";
import { type ReplySink, RequestMuxTransport } from "../../../../src/http/mcp/request-mux-transport.ts";

interface RecordingSink extends ReplySink {
  received: { message: JSONRPCMessage; options: TransportSendOptions | undefined }[];
  cancelledIds: unknown[];
}

function sink(): RecordingSink {
  const received: RecordingSink["received"] = [];
  const cancelledIds: unknown[] = [];
  return {
    received,
    cancelledIds,
    async send(message, options) {
      received.push({ message, options });
    },
    cancelled(id) {
      cancelledIds.push(id);
    },
  };
}

function request(id: string | number, method = "tools/list"): JSONRPCMessage {
  return { jsonrpc: "2.0", id, method, params: {} };
}

/** A mux whose server side is just a recorder of what it was handed. */
function recordingMux() {
  const mux = new RequestMuxTransport();
  const forwarded: JSONRPCMessage[] = [];
  mux.onmessage = (message) => forwarded.push(message);
  return { mux, forwarded };
}

const WS = "ws_0123456789abcdef";

/** What the HTTP route vouches for: `name` as the principal id, in `workspaceId`. */
function as(name: string, workspaceId = WS): MessageExtraInfo {
  const atrium = { principal: { id: name }, workspaceId, requestId: "r" };
  return { authInfo: { token: "", clientId: "", scopes: [], extra: { atrium } } };
}

function cancel(requestId: string | number): JSONRPCMessage {
  return { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId, reason: "stop" } };
}

function idOf(message: JSONRPCMessage | undefined): unknown {
  return message && "id" in message ? message.id : undefined;
}

describe("RequestMuxTransport", () => {
  it("remaps two requests with the same client id to distinct ids inside", () => {
    const { mux, forwarded } = recordingMux();
    mux.receive(request(1), undefined, sink());
    mux.receive(request(1), undefined, sink());
    expect(forwarded).toHaveLength(2);
    expect(idOf(forwarded[0])).not.toBe(idOf(forwarded[1]));
  });

  it("sends each answer to its own sink with the client's original id", async () => {
    const { mux, forwarded } = recordingMux();
    const a = sink();
    const b = sink();
    mux.receive(request(1), undefined, a);
    mux.receive(request(1), undefined, b);
    mux.receive(request("abc"), undefined, b);
    const [inA, inB, inC] = forwarded.map(idOf) as number[];
    // Answer out of order: the second request first.
    await mux.send({ jsonrpc: "2.0", id: inB as number, result: { answer: "b" } });
    await mux.send({ jsonrpc: "2.0", id: inA as number, result: { answer: "a" } });
    await mux.send({ jsonrpc: "2.0", id: inC as number, error: { code: -32601, message: "nope" } });
    expect(a.received.map((r) => r.message)).toEqual([{ jsonrpc: "2.0", id: 1, result: { answer: "a" } }]);
    expect(b.received.map((r) => r.message)).toEqual([
      { jsonrpc: "2.0", id: 1, result: { answer: "b" } },
      { jsonrpc: "2.0", id: "abc", error: { code: -32601, message: "nope" } },
    ]);
  });

  it("delivers an answer once: a second answer to the same id is dropped", async () => {
    const { mux, forwarded } = recordingMux();
    const a = sink();
    mux.receive(request(1), undefined, a);
    const inner = idOf(forwarded[0]) as number;
    await mux.send({ jsonrpc: "2.0", id: inner, result: {} });
    await mux.send({ jsonrpc: "2.0", id: inner, result: {} });
    expect(a.received).toHaveLength(1);
  });

  it("routes a notification related to a live request to that request's sink, under its original id", async () => {
    const { mux, forwarded } = recordingMux();
    const a = sink();
    const b = sink();
    mux.receive(request(5), undefined, a);
    mux.receive(request(5), undefined, b);
    const inner = idOf(forwarded[1]) as number;
    const progress: JSONRPCMessage = {
      jsonrpc: "2.0",
      method: "notifications/progress",
      params: { progressToken: "t", progress: 1 },
    };
    await mux.send(progress, { relatedRequestId: inner });
    expect(a.received).toEqual([]);
    expect(b.received).toEqual([{ message: progress, options: { relatedRequestId: 5 } }]);
  });

  it("drops a notification related to no live request", async () => {
    const { mux } = recordingMux();
    const a = sink();
    mux.receive(request(1), undefined, a);
    await mux.send({ jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: "x" } });
    await mux.send(
      { jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: "x" } },
      { relatedRequestId: 999 },
    );
    expect(a.received).toEqual([]);
  });

  it("cancels the same caller's request under its inner id, and tells its sink no answer will come", async () => {
    const { mux, forwarded } = recordingMux();
    const a = sink();
    mux.receive(request("x"), as("alice"), a);
    const inner = idOf(forwarded[0]);
    mux.receive(cancel("x"), as("alice"), sink());
    expect(forwarded[1]).toEqual({
      jsonrpc: "2.0",
      method: "notifications/cancelled",
      params: { requestId: inner, reason: "stop" },
    });
    expect(a.cancelledIds).toEqual(["x"]);
    // The handler's late answer goes nowhere.
    await mux.send({ jsonrpc: "2.0", id: inner as number, result: {} });
    expect(a.received).toEqual([]);
  });

  it("never cancels a request of another person, or of the same person in another workspace", () => {
    const { mux, forwarded } = recordingMux();
    const a = sink();
    mux.receive(request(1), as("alice"), a);
    mux.receive(cancel(1), as("bob"), sink());
    mux.receive(cancel(1), as("alice", "ws_ffffffffffffffff"), sink());
    mux.receive(cancel(1), undefined, sink());
    expect(forwarded).toHaveLength(1);
    expect(a.cancelledIds).toEqual([]);
  });

  it("abandon cancels the unanswered requests of that sink only", async () => {
    const { mux, forwarded } = recordingMux();
    const gone = sink();
    const other = sink();
    mux.receive(request(1), as("alice"), gone);
    mux.receive(request(2), as("alice"), gone);
    mux.receive(request(1), as("alice"), other);
    const [first, second] = forwarded.map(idOf);
    await mux.send({ jsonrpc: "2.0", id: first as number, result: {} });
    mux.abandon(gone);
    expect(forwarded.slice(3)).toEqual([
      {
        jsonrpc: "2.0",
        method: "notifications/cancelled",
        params: { requestId: second, reason: "The client closed the connection." },
      },
    ]);
    expect(gone.cancelledIds).toEqual([2]);
    expect(other.cancelledIds).toEqual([]);
  });

  it("forwards other notifications unchanged", () => {
    const { mux, forwarded } = recordingMux();
    const initialized: JSONRPCMessage = { jsonrpc: "2.0", method: "notifications/initialized" };
    mux.receive(initialized, undefined, sink());
    expect(forwarded).toEqual([initialized]);
  });

  it("ignores responses from the client", () => {
    const { mux, forwarded } = recordingMux();
    mux.receive({ jsonrpc: "2.0", id: 1, result: {} }, undefined, sink());
    expect(forwarded).toEqual([]);
  });

  it("close forgets pending requests and reports onclose", async () => {
    const { mux, forwarded } = recordingMux();
    const a = sink();
    let closed = false;
    mux.onclose = () => {
      closed = true;
    };
    mux.receive(request(1), undefined, a);
    await mux.close();
    await mux.send({ jsonrpc: "2.0", id: idOf(forwarded[0]) as number, result: {} });
    expect(closed).toBe(true);
    expect(a.received).toEqual([]);
  });

  it("behind a real SDK server, concurrent requests with the same id each get their own answer", async () => {
    const server = new Server({ name: "mux-test", version: "1.0.0" }, { capabilities: { tools: {} } });
    server.setRequestHandler("tools/call", async (req) => {
      const delayMs = Number(req.params.arguments?.delayMs ?? 0);
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      return { content: [{ type: "text", text: String(req.params.arguments?.who) }] };
    });
    const mux = new RequestMuxTransport();
    await server.connect(mux);
    try {
      const answers = ["slow", "fast"].map((who, i) => {
        return new Promise<JSONRPCMessage>((resolve) => {
          mux.receive(
            {
              jsonrpc: "2.0",
              id: 1,
              method: "tools/call",
              params: { name: "t", arguments: { who, delayMs: i === 0 ? 30 : 0 } },
            },
            undefined,
            { send: async (message) => resolve(message), cancelled: () => {} },
          );
        });
      });
      const [slow, fast] = await Promise.all(answers);
      expect(slow).toEqual({ jsonrpc: "2.0", id: 1, result: { content: [{ type: "text", text: "slow" }] } });
      expect(fast).toEqual({ jsonrpc: "2.0", id: 1, result: { content: [{ type: "text", text: "fast" }] } });
    } finally {
      await server.close();
    }
  });
});
