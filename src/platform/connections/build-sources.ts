import type { Logger } from "../../log.ts";
import type { ConnectionSource } from "./gate.ts";
import type { ConnectionRecord } from "./model.ts";

/**
 * The gated sources of `records` that are in service, for a registry being built. One that cannot
 * be built (its credential refused) is logged and left out, never failing the others.
 */
export async function buildSources(
  records: readonly ConnectionRecord[],
  build: (record: ConnectionRecord) => Promise<ConnectionSource>,
  log: Logger,
  workspaceId: string,
): Promise<ConnectionSource[]> {
  const built = await Promise.all(
    records
      .filter((record) => !record.disabled)
      .map((record) =>
        build(record).catch((error: unknown) => {
          log.error(
            { workspaceId, connection: record.name, err: error },
            "connection source could not be built",
          );
          return undefined;
        }),
      ),
  );
  return built.filter((source): source is ConnectionSource => source !== undefined);
}
