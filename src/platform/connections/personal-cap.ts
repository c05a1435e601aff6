import { Conflict } from "../../errors.ts";

/**
 * The most personal connections one person holds (pending OAuth ones included). Each is a client
 * in every workspace its owner is in and a probe of both health loops, so what one member can make
 * the instance hold is bounded; fifty is far past what a person connects by hand (adr/0091).
 */
export const MAX_PERSONAL_CONNECTIONS = 50;

/**
 * Places for a person's new connections: the ones stored and the adds still under way (an add
 * photographs a remote server before it stores anything), so two adds at once cannot both take
 * the last place.
 */
export class PersonalCap {
  private readonly adding = new Map<string, number>();

  /** Holds a place for one add of `ownerId`'s, or refuses past the cap; `release` gives it back. */
  reserve(ownerId: string, stored: number): { release(): void } {
    const adding = this.adding.get(ownerId) ?? 0;
    if (stored + adding >= MAX_PERSONAL_CONNECTIONS) {
      throw new Conflict(
        "personal_connections_full",
        `You have ${MAX_PERSONAL_CONNECTIONS} personal connections, the most one person may hold; remove one you no longer use before adding another.`,
      );
    }
    this.adding.set(ownerId, adding + 1);
    return {
      release: () => {
        const left = (this.adding.get(ownerId) ?? 1) - 1;
        if (left > 0) this.adding.set(ownerId, left);
        else this.adding.delete(ownerId);
      },
    };
  }
}
