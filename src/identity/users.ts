import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { AccountDeactivated, BootError, Conflict, NotFound } from "../errors.ts";
import { isPrincipalId } from "../ids.ts";
import { type Clock, systemClock } from "../kernel/clock.ts";
import { readJsonAtBoot, readJsonIfExists, writeJsonAtomic } from "../storage/atomic.ts";
import { makeFolderPathIfMissing } from "../storage/folders.ts";
import { KeyedLock } from "../storage/keyed-lock.ts";
import type { StorageLayout } from "../storage/paths.ts";
import { type Principal, withoutUnstated } from "./principal.ts";
import { isStandingId, newStandingId, type PersonStanding } from "./standing.ts";

const PROFILE_FILE = "profile.json";

/**
 * An email address as Atrium compares it: trimmed, with ASCII letters lowercased and nothing
 * else changed. Full Unicode folding would make another address match: `\u212Aate@…` (KELVIN
 * SIGN) lowercases to `kate@…`, so its holder could claim Kate's invitations
 * (test/unit/identity/users.test.ts "folds ASCII letters only"). The directory and invitations
 * both compare through this one function.
 */
export function foldEmail(email: string): string {
  return email.trim().replace(/[A-Z]/g, (letter) => String.fromCharCode(letter.charCodeAt(0) + 32));
}

/** A person as the directory knows them: what the provider last said, plus their status here. */
export interface Profile extends Principal {
  /** Set when an org admin deactivated the person; every active use is then refused. */
  deactivatedAt?: string;
  /** When an org admin last reactivated the person. */
  reactivatedAt?: string;
  /**
   * The id the last reactivation drew (`stn_` + 32 hex; absent: not reactivated since ids were
   * kept): a session or a consent (an authorization code still unredeemed, a grant the
   * deactivation missed) begun under another id no longer counts (standing.ts, ADR 0169 amended).
   */
  standingId?: string;
}

/**
 * The people who have signed in at least once, loaded at boot and kept current by its
 * writers: so an admin can add a member by email, and so a deactivated person is refused
 * on every request. A profile is rewritten only when a sign-in or a credential states a
 * different name, email or org role for the person.
 */
export class UserDirectory {
  private readonly known = new Map<string, Profile>();
  private readonly locks = new KeyedLock();

  constructor(
    private readonly layout: StorageLayout,
    private readonly clock: Clock = systemClock,
  ) {}

  /** Loads every stored profile; called once at boot. */
  async load(): Promise<void> {
    let entries: string[];
    try {
      entries = await readdir(join(this.layout.instanceDir(), "users"));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
      throw error;
    }
    for (const entry of entries) {
      // Dot-entries are writers' temp files; anything else that is not a principal id is not ours.
      if (entry.startsWith(".")) continue;
      if (!isPrincipalId(entry)) {
        throw new BootError(
          `Unexpected entry "${entry}" in ${join(this.layout.instanceDir(), "users")}: it holds only usr_ folders. Move it out.`,
        );
      }
      const path = join(this.layout.userDir(entry), PROFILE_FILE);
      const stored = (await readJsonAtBoot(path)) as Profile | undefined;
      if (stored) this.known.set(entry, checkedProfile(entry, path, stored));
    }
  }

  /**
   * Updates a person's profile from what a sign-in or a credential states about them. A
   * part the credential did not state (`principal.unstated`) keeps its stored value: a
   * token without an email claim never blanks the address (test/unit/identity/users.test.ts).
   *
   * A write that lands and then throws (the new file renamed into place, its folder's flush
   * failed) is the record asked for: memory holds what the disk does (`rememberDisk`), and once
   * that is what the credential states, the record is done. Thrown, a sign-in whose profile was
   * on disk answered 500 and started no session, and so did any request whose credential stated
   * a new name (test/integration/signin-unflushed-write.test.ts; ADR 0148). A write that did not
   * land leaves memory as it was, and still throws.
   */
  async record(principal: Principal): Promise<void> {
    if (updated(this.known.get(principal.id), principal) === undefined) return;
    await this.locks.run(principal.id, async () => {
      const next = updated(this.known.get(principal.id), principal);
      if (next === undefined) return;
      try {
        await this.write(next);
      } catch (error) {
        if (updated(this.known.get(principal.id), principal) !== undefined) throw error;
      }
    });
  }

  async get(principalId: string): Promise<Profile | undefined> {
    return this.known.get(principalId);
  }

  list(): Profile[] {
    return [...this.known.values()].sort(
      (a, b) => a.displayName.localeCompare(b.displayName) || a.id.localeCompare(b.id),
    );
  }

  isDeactivated(principalId: string): boolean {
    return this.known.get(principalId)?.deactivatedAt !== undefined;
  }

  /** The person's standing id, and when they were last reactivated (epoch ms), if ever. */
  standingOf(principalId: string): PersonStanding {
    const profile = this.known.get(principalId);
    return {
      ...(profile?.standingId === undefined ? {} : { standingId: profile.standingId }),
      ...(profile?.reactivatedAt === undefined ? {} : { reactivatedAt: Date.parse(profile.reactivatedAt) }),
    };
  }

  /**
   * Deactivates or reactivates a known person; their next request sees the change. A reactivation
   * draws a new standing id, written with the profile, so whatever they began before it is told
   * apart by an id no restored profile.json can hand out again, not by a clock (ADR 0169, amended
   * later still). A deactivation draws none: while deactivated
   * every use is refused anyway, and their browser session still names them, so they are told
   * why (a 403 page, not a sign-in). Reactivating someone who is not deactivated changes nothing:
   * it would void their consents for no reason.
   */
  setDeactivated(principalId: string, deactivated: boolean): Promise<Profile> {
    return this.locks.run(principalId, async () => {
      const current = this.known.get(principalId);
      if (!current)
        throw new NotFound("user_not_found", "No one with that id has signed in to this instance.");
      if (!deactivated && current.deactivatedAt === undefined) return current;
      const { deactivatedAt: _previous, ...rest } = current;
      const now = new Date(this.clock()).toISOString();
      const next: Profile = deactivated
        ? { ...rest, deactivatedAt: now }
        : { ...rest, reactivatedAt: now, standingId: newStandingId() };
      await this.write(next);
      return next;
    });
  }

  /**
   * Finds a known person by email, ignoring ASCII case (`foldEmail`). Two people signed in with the same
   * address is refused rather than guessed at: adding the wrong one would open the
   * workspace to them.
   */
  async findByEmail(email: string): Promise<Profile | undefined> {
    const wanted = foldEmail(email);
    const matches = [...this.known.values()].filter(
      (profile) => profile.email != null && foldEmail(profile.email) === wanted,
    );
    if (matches.length > 1) {
      throw new Conflict(
        "ambiguous_email",
        `${matches.length} people have signed in with that email; add the person by "principalId" instead (their GET /v1/bootstrap shows it).`,
      );
    }
    return matches[0];
  }

  private async write(profile: Profile): Promise<void> {
    const dir = this.layout.userDir(profile.id);
    // A first-seen person's folder is flushed in `users/`, or a power loss could take it, and the
    // profile written into it, away.
    await makeFolderPathIfMissing(dir);
    const path = join(dir, PROFILE_FILE);
    try {
      await writeJsonAtomic(path, profile);
    } catch (error) {
      await this.rememberDisk(profile.id, path);
      throw error;
    }
    this.known.set(profile.id, profile);
  }

  /**
   * After a write that threw, memory takes what profile.json holds. The write may have landed:
   * the new file renamed into place, then the folder's flush failed. Every request's check reads
   * memory, so kept as it was, a deactivated person worked on until a restart, and a reactivated
   * one stayed refused (test/integration/users-unflushed-write.test.ts; ADR 0148). A file that
   * cannot be read now, or is not this person's, leaves memory as it was: nothing is known of it.
   */
  private async rememberDisk(principalId: string, path: string): Promise<void> {
    let onDisk: unknown;
    try {
      onDisk = await readJsonIfExists(path);
    } catch {
      return;
    }
    if (typeof onDisk === "object" && onDisk !== null && (onDisk as Profile).id === principalId)
      this.known.set(principalId, onDisk as Profile);
  }
}

/**
 * A stored profile, its standing id's shape checked: a value of another shape (a hand edit) would
 * be compared as if it were an id (ADR 0169, amended later still).
 */
function checkedProfile(principalId: string, path: string, profile: Profile): Profile {
  if (profile.standingId !== undefined && !isStandingId(profile.standingId)) {
    throw new BootError(
      `The profile of ${principalId} is corrupt: ${path} gives a standingId that is not "stn_" and 32 lowercase hex digits; ` +
        "restore it from a backup, or remove the field (their sessions and OAuth grants begun since their last reactivation are then refused).",
    );
  }
  return profile;
}

/**
 * The profile once what `principal` states is applied, or `undefined` when nothing changes.
 * A first-seen person is stored as the credential describes them, fallbacks included: a
 * name is needed, and a later credential that states it replaces the fallback. A token's
 * own org role is never stored (ADR 0071): the fallback, member, is.
 */
function updated(current: Profile | undefined, principal: Principal): Profile | undefined {
  if (current === undefined) return withoutUnstated(principal);
  const { unstated = [] } = principal;
  // Checked field by field before anything is built: every request records its person, and
  // almost always nothing changed (the MCP front door's hot path, adr/0052).
  const same =
    (unstated.includes("displayName") || principal.displayName === current.displayName) &&
    (unstated.includes("email") || principal.email === current.email) &&
    (unstated.includes("orgRole") || principal.orgRole === current.orgRole);
  if (same) return undefined;
  return {
    ...current,
    ...(unstated.includes("displayName") ? {} : { displayName: principal.displayName }),
    ...(unstated.includes("email") ? {} : { email: principal.email }),
    ...(unstated.includes("orgRole") ? {} : { orgRole: principal.orgRole }),
  };
}

/** Refuses a person an org admin deactivated: checked as a request comes, and again once its body has. */
export function refuseDeactivated(users: Pick<UserDirectory, "isDeactivated">, principalId: string): void {
  if (users.isDeactivated(principalId)) throw new AccountDeactivated();
}
