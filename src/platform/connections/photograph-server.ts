import { InvalidInput } from "../../errors.ts";
import type { Clock } from "../../kernel/clock.ts";
import { UnfinishedListing } from "../../sources/mcp-source.ts";
import { type ConnectionRecord, shownUrl } from "./model.ts";
import type { RemoteServers } from "./remote.ts";
import type { RemoteSource } from "./remote-source.ts";
import { compileInputSchema } from "./schemas.ts";
import { photograph, type Snapshot } from "./snapshot.ts";

/** The most Skills Extension skills one snapshot pins. */
const MAX_REMOTE_SKILLS = 50;

/**
 * Connects fresh, requires tools, lists every page, screens, digests: the next snapshot. An abort
 * of `signal` (a disable or remove during a refresh, refreshes.ts) cuts the client where it is, a
 * connect included, and the photograph fails with the signal's reason.
 */
export async function photographServer(
  remote: RemoteServers,
  clock: Clock,
  record: ConnectionRecord,
  version: number,
  signal?: AbortSignal,
): Promise<Snapshot> {
  const source = await remote.source(record);
  // "now" cuts a connect the server holds, which the client library's own close cannot end (adr/0109).
  const cut = () => void source.close("now").catch(() => undefined);
  signal?.addEventListener("abort", cut, { once: true });
  try {
    signal?.throwIfAborted();
    return await takePhotograph(source, clock, record, version);
  } catch (error) {
    // A cut client fails as if the server had: the refresh is told why it really ended.
    signal?.throwIfAborted();
    throw error;
  } finally {
    signal?.removeEventListener("abort", cut);
    await source.close().catch(() => undefined);
  }
}

async function takePhotograph(
  source: RemoteSource,
  clock: Clock,
  record: ConnectionRecord,
  version: number,
): Promise<Snapshot> {
  const described = await source.describe().catch((error: unknown) => {
    throw new InvalidInput(
      `Could not connect to ${shownUrl(record.url)}: ${(error as Error).message.slice(0, 300)}`,
    );
  });
  if (!described.hasTools)
    throw new InvalidInput(`The server at ${shownUrl(record.url)} offers no tools capability.`);
  const tools = await source.listTools().catch((error: unknown) => {
    if (error instanceof UnfinishedListing)
      throw new InvalidInput(`${error.message} Nothing was photographed.`);
    throw new InvalidInput(
      `The server at ${shownUrl(record.url)} did not list its tools: ${(error as Error).message.slice(0, 300)}`,
    );
  });
  const skills = await source.skills(MAX_REMOTE_SKILLS).catch((error: unknown) => {
    throw new InvalidInput(
      `The server at ${shownUrl(record.url)} offered skills that could not be read: ${(error as Error).message.slice(0, 300)}`,
    );
  });
  const taken = photograph(tools, {
    version,
    takenAt: new Date(clock()).toISOString(),
    generation: record.authorizationGeneration,
    protocolVersion: described.protocolVersion ?? "unknown",
    ...(described.serverInfo ? { serverInfo: described.serverInfo } : {}),
    ...(described.instructions ? { instructions: described.instructions } : {}),
    ...(skills.length > 0 ? { skills } : {}),
  });
  if ("problems" in taken)
    throw new InvalidInput(`Refused to photograph the server's tools: ${taken.problems.join("; ")}.`);
  for (const tool of taken.snapshot.tools) {
    try {
      compileInputSchema(tool);
    } catch (error) {
      throw new InvalidInput(
        `Tool "${tool.name}" has an input schema that cannot be checked: ${(error as Error).message.slice(0, 200)}.`,
      );
    }
  }
  return taken.snapshot;
}
