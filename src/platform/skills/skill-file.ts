/** A skill's file in its folder. */
export const SKILL_FILE = "SKILL.md";

/**
 * A change newer than this, at the time of a read, is not trusted to show in a later stamp: file
 * systems keep times to a tick (ext4: a few ms; others up to 2 s). What was read that close to a
 * change is read again on its next use, until its newest time is older (adr/0051).
 */
export const RACY_MS = 2_000;
