/**
 * Whether this process may do a workspace's periodic work. The seam a scale-out replaces
 * with real leases (DESIGN "One root, one process — and later, several"); see ADR 0031.
 */
export interface LeaseHolder {
  holds(workspaceId: string): boolean;
}

/** One process per data root (ADR 0022): the instance lock makes every lease local. */
export const everyLeaseLocal: LeaseHolder = {
  holds: () => true,
};

/**
 * Work that only one holder in the whole instance may do at a time for a key (a connection's
 * token refresh: two refreshes of one rotating family kill it). One process per root makes an
 * in-process keyed lock enough (storage/keyed-lock.ts); a scale-out replaces this seam with a
 * shared lease, and nothing that calls it changes.
 */
export interface ExclusiveLeases {
  run<T>(key: string, work: () => Promise<T>): Promise<T>;
}
