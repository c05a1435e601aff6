import { randomBytes } from "node:crypto";
import { InvalidInput } from "../../errors.ts";
import { isPrincipalId } from "../../ids.ts";
import { isUnshowable, wellFormed } from "../../text.ts";

export const SEVERITIES = ["info", "warning", "error"] as const;
export type Severity = (typeof SEVERITIES)[number];

/** What a producer gives: everything else about an entry is the runtime's to say. */
export interface NotificationDraft {
  title: string;
  body?: string | undefined;
  severity?: Severity | undefined;
  /** A member the entry is for alone (a personal connection's sign-in); everyone when absent. */
  to?: string | undefined;
  /** Small structured detail for a client (a connection's name, a run's id). */
  data?: Record<string, unknown> | undefined;
}

/** One entry of a workspace's inbox, as stored and as answered. */
export interface Notification {
  id: string;
  /** Per workspace, from 1, never reused: across restarts and after retention removes entries. */
  seq: number;
  workspaceId: string;
  /** Who recorded it: a platform app's name, or `workspace` for the runtime's membership events. */
  source: string;
  receivedAt: string;
  title: string;
  body?: string;
  severity: Severity;
  to?: string;
  data?: Record<string, unknown>;
}

/** A notification as one member sees it: with whether they have acknowledged it. */
export type NotificationView = Notification & { acked: boolean };

const MAX_TITLE_CHARS = 200;
const MAX_BODY_CHARS = 4000;
const MAX_DATA_BYTES = 4096;
const DRAFT_FIELDS = new Set(["title", "body", "severity", "to", "data"]);
const ID = /^ntf_[0-9a-f]{24}$/;

export function newNotificationId(): string {
  return `ntf_${randomBytes(12).toString("hex")}`;
}

export function isNotificationId(value: string): boolean {
  return ID.test(value);
}

/**
 * A draft checked field by field. A producer that tries to set a field the runtime stamps
 * (`id`, `seq`, `workspaceId`, `source`, `receivedAt`) is refused, never silently corrected:
 * that is a producer bug to see, not to hide.
 */
export function checkDraft(draft: NotificationDraft): NotificationDraft {
  const extra = Object.keys(draft).filter((key) => !DRAFT_FIELDS.has(key));
  if (extra.length > 0) {
    throw new InvalidInput(
      `A notification cannot set ${extra.map((k) => `"${k}"`).join(", ")}: the runtime stamps them.`,
    );
  }
  const { title, body, severity, to, data } = draft;
  if (
    typeof title !== "string" ||
    title.trim() === "" ||
    title.length > MAX_TITLE_CHARS ||
    isUnshowable(title)
  ) {
    throw new InvalidInput(`A notification's title is 1 to ${MAX_TITLE_CHARS} characters on one line.`);
  }
  if (body !== undefined && (typeof body !== "string" || body.length > MAX_BODY_CHARS)) {
    throw new InvalidInput(`A notification's body is at most ${MAX_BODY_CHARS} characters.`);
  }
  if (severity !== undefined && !SEVERITIES.includes(severity)) {
    throw new InvalidInput(`A notification's severity is one of ${SEVERITIES.join(", ")}.`);
  }
  if (to !== undefined && !isPrincipalId(to))
    throw new InvalidInput('A notification\'s "to" is a principal id.');
  if (data !== undefined) {
    const isObject = typeof data === "object" && data !== null && !Array.isArray(data);
    if (!isObject || Buffer.byteLength(JSON.stringify(data)) > MAX_DATA_BYTES) {
      throw new InvalidInput(`A notification's data is a JSON object of at most ${MAX_DATA_BYTES} bytes.`);
    }
  }
  return draft;
}

/** A run of control characters (C0, DEL, C1) and white space, line and paragraph separators too. */
const BREAKS = /[\p{Cc}\s]+/gu;

/**
 * The title of a notice the runtime writes about something someone else named — a person's
 * display name as their identity provider gave it, a task's name — made to pass checkDraft:
 * such a notice must never be refused for the name in it (a 300-character display name, or one
 * with a tab, lost the deactivation notice: test/integration/notifications.test.ts). In the name,
 * each run of controls and white space becomes one space and half a surrogate pair U+FFFD; a
 * name longer than the room `phrase` leaves is cut on a code point, never inside a pair, and
 * ends with "…". A name with nothing left in it gives way to `fallback` (an id, say).
 */
export function titleNaming(
  name: string | undefined,
  phrase: (name: string) => string,
  fallback = "",
): string {
  const room = MAX_TITLE_CHARS - phrase("").length;
  const cleaned = wellFormed(name ?? "")
    .replace(BREAKS, " ")
    .trim();
  return phrase(cutToLength(cleaned === "" ? fallback : cleaned, room));
}

/** `text` within `maxChars` UTF-16 units (what checkDraft counts), cut between code points. */
function cutToLength(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  let kept = "";
  for (const point of text) {
    if (kept.length + point.length > maxChars - 1) break;
    kept += point;
  }
  return `${kept.trimEnd()}…`;
}

/** Whether an entry (or its name, which carries its addressee) is one `principalId` may see. */
export function isVisibleTo(entry: { to?: string | undefined }, principalId: string): boolean {
  return entry.to === undefined || entry.to === principalId;
}
