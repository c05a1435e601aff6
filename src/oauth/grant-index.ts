/** What the index holds of one live grant: enough to find it and to choose which to let go. */
export interface IndexedGrant {
  grantId: string;
  principalId: string;
  workspaceId: string;
  /** Whether a registered client holds a live grant decides that it is kept (ADR 0137). */
  clientId: string;
  /** When it was made or last refreshed, epoch ms: the least recently used goes first. */
  lastUsedAt: number;
  absoluteExpiresAt: number;
}

/**
 * The live (not revoked) grants, by person, by workspace and by client, in memory: built from the records
 * when `Grants` loads and kept by its every write, so listing one person's applications and
 * revoking a person's or a workspace's grants read only the records that match. Before, each
 * read every grant file in the instance: at 3,000 grants another person's listing or a member's
 * removal took ≈ 250 ms, growing with every grant anyone made (ADR 0089).
 */
export class GrantIndex {
  private readonly live = new Map<string, IndexedGrant>();
  private readonly byPrincipal = new Map<string, Set<string>>();
  private readonly byWorkspace = new Map<string, Set<string>>();
  private readonly byClient = new Map<string, Set<string>>();

  /** Adds or replaces a live grant. */
  put(entry: IndexedGrant): void {
    this.remove(entry.grantId);
    this.live.set(entry.grantId, { ...entry });
    addTo(this.byPrincipal, entry.principalId, entry.grantId);
    addTo(this.byWorkspace, entry.workspaceId, entry.grantId);
    addTo(this.byClient, entry.clientId, entry.grantId);
  }

  /** Forgets a grant: revoked, or deleted. */
  remove(grantId: string): void {
    const entry = this.live.get(grantId);
    if (entry === undefined) return;
    this.live.delete(grantId);
    removeFrom(this.byPrincipal, entry.principalId, grantId);
    removeFrom(this.byWorkspace, entry.workspaceId, grantId);
    removeFrom(this.byClient, entry.clientId, grantId);
  }

  /** Whether `clientId` holds a grant that is not revoked and within its lifetime at `now`. */
  hasLiveOf(clientId: string, now: number): boolean {
    for (const id of this.byClient.get(clientId) ?? []) {
      if ((this.live.get(id) as IndexedGrant).absoluteExpiresAt > now) return true;
    }
    return false;
  }

  /** Whether `grantId` is a live (not revoked) grant; its lifetime is not judged here. */
  has(grantId: string): boolean {
    return this.live.has(grantId);
  }

  touch(grantId: string, at: number): void {
    const entry = this.live.get(grantId);
    if (entry !== undefined) entry.lastUsedAt = at;
  }

  /** The ids of the live grants that match: a person's, a workspace's, or a person's in a workspace. */
  matching(match: { principalId?: string; workspaceId?: string }): string[] {
    const mine = match.principalId === undefined ? undefined : this.byPrincipal.get(match.principalId);
    const there = match.workspaceId === undefined ? undefined : this.byWorkspace.get(match.workspaceId);
    if (match.principalId !== undefined && mine === undefined) return [];
    if (match.workspaceId !== undefined && there === undefined) return [];
    // Walk the smaller set and check the other.
    const [walk, check] =
      mine === undefined
        ? [there, undefined]
        : there === undefined || mine.size <= there.size
          ? [mine, there]
          : [there, mine];
    return [...(walk ?? [])].filter((id) => check === undefined || check.has(id));
  }

  /**
   * A person's live grants past `max`, least recently used first, leaving `keep` out: the ones a
   * new grant pushes out. Grants past their lifetime at `now` are dropped from the index first and
   * do not count.
   */
  overflowOf(principalId: string, max: number, now: number, keep: string): IndexedGrant[] {
    const ids = this.byPrincipal.get(principalId);
    if (ids === undefined) return [];
    const entries: IndexedGrant[] = [];
    for (const id of [...ids]) {
      const entry = this.live.get(id) as IndexedGrant;
      if (entry.absoluteExpiresAt <= now) this.remove(id);
      else if (id !== keep) entries.push(entry);
    }
    const over = entries.length + (ids.has(keep) ? 1 : 0) - max;
    if (over <= 0) return [];
    return entries
      .sort((a, b) => a.lastUsedAt - b.lastUsedAt || a.grantId.localeCompare(b.grantId))
      .slice(0, over);
  }
}

function addTo(index: Map<string, Set<string>>, key: string, grantId: string): void {
  let ids = index.get(key);
  if (ids === undefined) {
    ids = new Set();
    index.set(key, ids);
  }
  ids.add(grantId);
}

function removeFrom(index: Map<string, Set<string>>, key: string, grantId: string): void {
  const ids = index.get(key);
  if (ids === undefined) return;
  ids.delete(grantId);
  if (ids.size === 0) index.delete(key);
}
