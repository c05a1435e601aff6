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
