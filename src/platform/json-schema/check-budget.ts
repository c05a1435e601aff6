/**
 * What one check of a value against a schema Atrium did not write may spend of one kind of work
 * (pattern matching, ADR 0104; alternatives tried, ADR 0157), counted as the check runs. The count
 * lives on the instance, not in AsyncLocalStorage: a check is synchronous from start to end, so no
 * other can interleave.
 */
export class CheckBudget {
  private spent: number | undefined;

  constructor(
    readonly max: number,
    /** Said when work is spent outside any check: a validation run without its budget, a bug. */
    private readonly outside: string,
  ) {}

  /** Runs `check` with `max` to spend; inside another, it spends the outer one's. */
  within<T>(check: () => T): T {
    if (this.spent !== undefined) return check();
    this.spent = 0;
    try {
      return check();
    } finally {
      this.spent = undefined;
    }
  }

  /** Spends `units` of the check in progress; answers whether it has now spent past `max`. */
  spend(units: number): boolean {
    if (this.spent === undefined) throw new Error(this.outside);
    this.spent += units;
    return this.spent > this.max;
  }
}
