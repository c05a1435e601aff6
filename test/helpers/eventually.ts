import { vi } from "vitest";

/**
 * `vi.waitFor` with room for a loaded machine (vitest.config.ts gives `expect.poll` the same). Its
 * default gives up after one second, and a check that is only slow (a suite sharing two cores with
 * other suites) then fails though nothing is wrong. One that never comes true still fails.
 */
export function eventually<T>(
  check: () => T | Promise<T>,
  options: { timeout?: number; interval?: number } = {},
): Promise<T> {
  return vi.waitFor(check, { timeout: 15_000, ...options });
}
