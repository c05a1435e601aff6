import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { InvalidInput } from "../../../../src/errors.ts";
import { type Camera, photographServer } from "../../../../src/platform/connections/photograph-server.ts";
import type { RemoteServers } from "../../../../src/platform/connections/remote.ts";
import { DEFAULT_MAX_SNAPSHOT_BYTES } from "../../../../src/platform/connections/snapshot.ts";
import { connectionRecord } from "../../../helpers/connections.ts";
import { gate } from "../../../helpers/gate.ts";

// A record stored before query credentials were refused (ADR 0108) may hold one in its URL: the
// refusals a photograph answers (an admin's refresh, a member's view of its failure) show the URL
// as every view does, its value redacted.

const SECRET = "sk-legacy-query-value";

const cameraFor = (remote: RemoteServers): Camera => ({
  remote,
  clock: () => 0,
  maxSnapshotBytes: DEFAULT_MAX_SNAPSHOT_BYTES,
});

describe("a photograph's refusal", () => {
  it.each([
    ["a connect that fails", { describe: async () => Promise.reject(new Error("ECONNREFUSED")) }],
    ["a server without tools", { describe: async () => ({ hasTools: false }) }],
  ])("names the URL without a query credential's value: %s", async (_, source) => {
    const remote = {
      source: async () => ({ ...source, close: async () => undefined }),
    } as unknown as RemoteServers;
    const record = connectionRecord("ws_0123456789abcdef", {
      url: `https://mcp.example.com/mcp?api_key=${SECRET}`,
    });
    const refusal = await photographServer(cameraFor(remote), record, 1).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(InvalidInput);
    expect((refusal as Error).message).toContain("https://mcp.example.com/mcp?api_key=redacted");
    expect((refusal as Error).message).not.toContain(SECRET);
  });
});

describe("a photograph for a refresh", () => {
  const record = connectionRecord("ws_0123456789abcdef");
  const steady = {
    describe: async () => ({ hasTools: true, protocolVersion: "2026-07-28" }),
    listTools: async () => [],
    skills: async () => [],
  };

  it.each([
    ["taken", steady],
    ["refused", { ...steady, describe: async () => Promise.reject(new Error("ECONNREFUSED")) }],
  ])("leaves no listener on the refresh's signal once it ends: one %s", async (outcome, source) => {
    const remote = {
      source: async () => ({ ...source, close: async () => undefined }),
    } as unknown as RemoteServers;
    const refresh = new AbortController();
    const ended = await photographServer(cameraFor(remote), record, 2, refresh.signal).then(
      () => "taken",
      () => "refused",
    );
    expect(ended).toBe(outcome);
    expect(getEventListeners(refresh.signal, "abort")).toHaveLength(0);
  });

  it("cuts its client at once when the refresh ends, and fails with the refresh's reason", async () => {
    const closes: (string | undefined)[] = [];
    const connecting = gate();
    let cutConnect: (error: Error) => void = () => undefined;
    const remote = {
      source: async () => ({
        ...steady,
        describe: () =>
          new Promise((_, reject) => {
            cutConnect = reject;
            connecting.open();
          }),
        close: async (how?: string) => {
          closes.push(how);
          cutConnect(new Error("The client was closed before the server answered."));
        },
      }),
    } as unknown as RemoteServers;
    const refresh = new AbortController();
    const taking = photographServer(cameraFor(remote), record, 2, refresh.signal);
    await connecting.promise;
    const disabled = new Error("disabled meanwhile");
    refresh.abort(disabled);
    await expect(taking).rejects.toBe(disabled);
    expect(closes[0]).toBe("now");
    expect(getEventListeners(refresh.signal, "abort")).toHaveLength(0);
  });
});
