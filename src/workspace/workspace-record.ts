import { BootError, InvalidInput } from "../errors.ts";
import { parseStoredJson } from "../storage/atomic.ts";
import { hidesText, isUnshowable } from "../text.ts";
import { isMembershipId } from "./membership-id.ts";
import { MAX_WORKSPACE_NAME_CHARS, type Workspace } from "./model.ts";

// What a workspace.json may hold, checked where it is read (WorkspaceStore) and where a name is given.

export function corrupt(id: string, path: string, error: unknown): BootError {
  return new BootError(`Workspace ${id} is corrupt: ${path} cannot be read (${(error as Error).message}).`);
}

/** A workspace.json's text, parsed and checked to describe the workspace its folder names. */
export function checkRecord(id: string, path: string, text: string): Workspace {
  let parsed: unknown;
  try {
    parsed = parseStoredJson(path, text);
  } catch (error) {
    // Named by line and column, never by V8's message, which quotes the text (it may hold a secret).
    throw new BootError(`Workspace ${id} is corrupt: ${(error as Error).message}`);
  }
  const ws = parsed as Workspace;
  if (
    typeof ws !== "object" ||
    ws === null ||
    ws.id !== id ||
    typeof ws.name !== "string" ||
    !Array.isArray(ws.members)
  ) {
    throw new BootError(`Workspace ${id} is corrupt: ${path} does not describe workspace ${id}.`);
  }
  // What tells a membership from one its person left (ADR 0169, amended): a value of another
  // shape (a hand edit) would be compared as if it were an id.
  const badId = ws.members.find((m) => m?.membershipId !== undefined && !isMembershipId(m.membershipId));
  if (badId) {
    throw new BootError(
      `Workspace ${id} is corrupt: ${path} gives member ${String(badId.principalId)} a membershipId that is not "mbs_" and 32 lowercase hex digits; ` +
        "restore it from a backup, or remove the field (what the member began since they joined is then refused).",
    );
  }
  return ws;
}

/**
 * A name is shown to people who are not members yet (an invitee's list, their home page), so
 * it holds nothing they cannot see: no C0 or C1 control, no line or paragraph separator, no
 * bidirectional control that would reorder what they read (U+202E), no zero-width or other
 * invisible character (test/unit/workspace/store.test.ts "create refuses").
 */
export function checkName(name: string): string {
  const trimmed = typeof name === "string" ? name.trim() : "";
  if (
    trimmed.length === 0 ||
    trimmed.length > MAX_WORKSPACE_NAME_CHARS ||
    isUnshowable(trimmed) ||
    hidesText(trimmed)
  ) {
    throw new InvalidInput(
      `A workspace name is 1 to ${MAX_WORKSPACE_NAME_CHARS} characters on one line, with no control characters (C0, DEL or C1) or line or paragraph separators (U+2028, U+2029), ` +
        "no invisible characters (zero-width, bidirectional controls such as U+202E, other default-ignorable ones) " +
        "and no half of a surrogate pair.",
    );
  }
  return trimmed;
}
