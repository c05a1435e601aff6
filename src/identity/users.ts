import { mkdir, readdir } from "node:fs/promises";
import { join } from "node:path";
import { BootError } from "../errors.ts";
import { readJsonIfExists, writeJsonAtomic } from "../storage/atomic.ts";
import type { StorageLayout } from "../storage/paths.ts";
import { isPrincipalId, type Principal } from "./principal.ts";

const PROFILE_FILE = "profile.json";

/**
 * The people who have signed in at least once, so an admin can add a member by email.
 * A profile is written when a principal is first seen or its name or email changes.
 */
export class UserDirectory {
  private readonly known = new Map<string, Principal>();

  constructor(private readonly layout: StorageLayout) {}

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
      const stored = (await readJsonIfExists(join(this.layout.userDir(entry), PROFILE_FILE))) as
        | Principal
        | undefined;
      if (stored) this.known.set(entry, stored);
    }
  }

  async record(principal: Principal): Promise<void> {
    const current = this.known.get(principal.id);
    if (current && current.displayName === principal.displayName && current.email === principal.email) return;
    const dir = this.layout.userDir(principal.id);
    if (!current) {
      const stored = (await readJsonIfExists(join(dir, PROFILE_FILE))) as Principal | undefined;
      if (stored && stored.displayName === principal.displayName && stored.email === principal.email) {
        this.known.set(principal.id, principal);
        return;
      }
    }
    await mkdir(dir, { recursive: true });
    await writeJsonAtomic(join(dir, PROFILE_FILE), principal);
    this.known.set(principal.id, principal);
  }

  async get(principalId: string): Promise<Principal | undefined> {
    const cached = this.known.get(principalId);
    if (cached) return cached;
    const stored = (await readJsonIfExists(join(this.layout.userDir(principalId), PROFILE_FILE))) as
      | Principal
      | undefined;
    if (stored) this.known.set(principalId, stored);
    return stored;
  }

  /** Finds a known person by email, case-insensitively. */
  async findByEmail(email: string): Promise<Principal | undefined> {
    const wanted = email.trim().toLowerCase();
    for (const principal of this.known.values()) {
      if (principal.email?.toLowerCase() === wanted) return principal;
    }
    return undefined;
  }
}
