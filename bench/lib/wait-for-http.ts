import { setTimeout as sleep } from "node:timers/promises";
import type { ChildServer } from "./child-server.ts";

const POLL_MS = 50;

// Polls until the URL answers 200. Stops early if the child dies, quoting its output, because
// "timed out" alone says nothing about why a server never came up.
export async function waitForHttpOk(server: ChildServer, url: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastProblem = "no response yet";
  while (Date.now() < deadline) {
    const exited = server.exited();
    if (exited) throw new Error(`${server.name} ${exited} before ${url} answered 200.\n${server.output}`);
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      await response.arrayBuffer();
      if (response.status === 200) return;
      lastProblem = `HTTP ${response.status}`;
    } catch (error) {
      lastProblem = error instanceof Error ? error.message : String(error);
    }
    await sleep(POLL_MS);
  }
  throw new Error(
    `${server.name} did not answer 200 on ${url} within ${timeoutMs} ms (${lastProblem}).\n${server.output}`,
  );
}
