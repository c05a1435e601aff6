import { InvalidInput } from "../../errors.ts";
import type { Clock } from "../../kernel/clock.ts";
import { UnfinishedListing } from "../../sources/mcp-source.ts";
import type { ConnectionSettings } from "./config.ts";
import { type ConnectionRecord, shownUrl } from "./model.ts";
import type { RemoteServers } from "./remote.ts";
import type { RemoteSource } from "./remote-source.ts";
import { compileInputSchema } from "./schemas.ts";
import { photograph, type Snapshot } from "./snapshot.ts";

/** The most Skills Extension skills one snapshot pins. */
const MAX_REMOTE_SKILLS = 50;

/** What a photograph is taken with: the way to the server, the time, and how large one may be. */
export interface Camera {
  remote: RemoteServers;
  clock: Clock;
  /** `connections.maxSnapshotBytes`: the most a whole snapshot may take as stored. */
  maxSnapshotBytes: number;
}

/** The camera of a service's deps, its bound read from the instance's `connections` section. */
export function cameraOf(deps: {
  remote: RemoteServers;
  clock: Clock;
  settings: Pick<ConnectionSettings, "maxSnapshotBytes">;
}): Camera {
  return { remote: deps.remote, clock: deps.clock, maxSnapshotBytes: deps.settings.maxSnapshotBytes };
}

/**
 * Connects fresh, requires tools, lists every page, screens, digests: the next snapshot. An abort
 * of `signal` (a disable or remove during a refresh, refreshes.ts) cuts the client where it is, a
 * connect included, and the photograph fails with the signal's reason.
 */
export async function photographServer(
  camera: Camera,
  record: ConnectionRecord,
  version: number,
  signal?: AbortSignal,
): Promise<Snapshot> {
  const source = await camera.remote.source(record);
  // "now" cuts a connect the server holds, which the client library's own close cannot end (adr/0109).
  const cut = () => void source.close("now").catch(() => undefined);
  signal?.addEventListener("abort", cut, { once: true });
  try {
    signal?.throwIfAborted();
    return await takePhotograph(source, camera, record, version);
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
  { clock, maxSnapshotBytes }: Camera,
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
  const taken = photograph(
    tools,
    {
      version,
      takenAt: new Date(clock()).toISOString(),
      generation: record.authorizationGeneration,
      protocolVersion: described.protocolVersion ?? "unknown",
      ...(described.serverInfo ? { serverInfo: described.serverInfo } : {}),
      ...(described.instructions ? { instructions: described.instructions } : {}),
      ...(skills.length > 0 ? { skills } : {}),
    },
    maxSnapshotBytes,
    record.name,
  );
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
