/**
 * The instance-wide bound on registered clients holding no live grant (ADR 0156). Registration
 * is open and its per-address limit does not bound the instance: a flood from many addresses (an
 * IPv6 /48 holds 65,536 /64s) could otherwise fill the disk in the 30 days before the sweep
 * (ADR 0137) takes its clients away. It refuses a new client rather than evicting an old one: a
 * client that was registered may be mid-consent, and one that was used is never deleted for room.
 *
 * It knows the ids of the stored registered clients (loaded at boot, kept by registration and the
 * sweep); a client counts while `hasLiveGrant` is false for it. Counting walks the ids only once
 * there are `max` of them, since fewer cannot hold `max` without a grant.
 */
export class UnusedClientCap {
  private readonly ids = new Set<string>();

  constructor(
    /** instance.json `oauth.maxUnusedClients`. */
    readonly max: number,
    private readonly hasLiveGrant: (clientId: string) => boolean,
  ) {}

  /** The stored clients found at boot; unreadable records count, as they take room all the same. */
  load(ids: Iterable<string>): void {
    for (const id of ids) this.ids.add(id);
  }

  /**
   * Takes room for a new client `id` when fewer than `max` stored clients hold no live grant, and
   * says whether it did. Synchronous, so two registrations at once cannot both take the last room.
   */
  reserve(id: string): boolean {
    if (this.ids.size >= this.max && this.unused() >= this.max) return false;
    this.ids.add(id);
    return true;
  }

  /** A client no longer stored: swept, or its registration's write failed. */
  forget(id: string): void {
    this.ids.delete(id);
  }

  private unused(): number {
    let count = 0;
    for (const id of this.ids) if (!this.hasLiveGrant(id)) count += 1;
    return count;
  }
}
