import type { Logger } from "../../log.ts";

/**
 * Why a workspace connection that bears a platform app's name is not served, as its view and a
 * refused enable say it. A connection cannot be added under an app's name, but an upgrade can
 * bring an app named like a connection added before it; the app keeps the name, and the
 * connection cannot be renamed, so an admin removes it and adds it again (adr/0128).
 */
export interface ReservedNameProblem {
  code: "connection_name_reserved";
  message: string;
}

export function reservedNameProblem(
  name: string,
  appNames: readonly string[],
): ReservedNameProblem | undefined {
  if (!appNames.includes(name)) return undefined;
  return {
    code: "connection_name_reserved",
    message:
      `Connection "${name}" is not served, and cannot be enabled: this instance has a platform app ` +
      `named "${name}", whose tools keep that name. Remove the connection and add it again under another name.`,
  };
}

/**
 * Once at boot, after recovery has indexed every connection: each that bears an app's name, for
 * the operator who upgraded to see at once, not at a workspace's first request.
 */
export function logReservedNames(
  connections: Iterable<{ workspaceId: string; name: string }>,
  appNames: readonly string[],
  log: Logger,
): void {
  for (const { workspaceId, name } of connections) {
    if (!appNames.includes(name)) continue;
    log.warn(
      { workspaceId, connection: name },
      "connection not served: a platform app holds its name; an admin of the workspace removes the " +
        "connection and adds it again under another name",
    );
  }
}
