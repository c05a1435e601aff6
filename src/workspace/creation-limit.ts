import { Conflict } from "../errors.ts";
import { roleIn, type Workspace } from "./model.ts";

/**
 * Refuses a create while `creatorId` administers `limit` or more of `theirs` (the live workspaces
 * listing them): `workspaces.maxAdministeredPerPerson` (ADR 0141). Only admin places count, since
 * an admin is who answers for a workspace and may delete it; a workspace they were only invited
 * into, or one they handed to another admin and stepped down from, is not theirs to free. An
 * archived workspace is not listed, so deleting one frees its place at once. The caller holds
 * the creator's lock, so two creates racing for the last place cannot both see it free.
 */
export function assertMayCreate(theirs: Iterable<Workspace>, creatorId: string, limit: number): void {
  let administered = 0;
  for (const workspace of theirs) {
    if (roleIn(workspace, creatorId) === "admin") administered++;
  }
  if (administered < limit) return;
  throw new Conflict(
    "too_many_workspaces",
    `You administer ${administered} workspaces, and this instance lets a person create one only ` +
      `while they administer fewer than ${limit} (workspaces.maxAdministeredPerPerson). Delete one ` +
      "you no longer need, or make another member its admin and step down, then create again; the " +
      "instance's operator can raise the limit.",
  );
}
