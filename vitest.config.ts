import { defineConfig } from "vitest/config";

// biome-ignore lint/style/noDefaultExport: vitest reads the default export.
export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    // A poll that is only slow on a loaded machine (a suite sharing two cores) must not fail:
    // vitest's 1 s default did. test/helpers/eventually.ts gives vi.waitFor the same room.
    expect: { poll: { timeout: 15_000 } },
    pool: "forks",
    // Vitest's default is one worker less than the cores, which is a single worker on a 2-core
    // machine: every file ran one after another. Most integration time is spent waiting on child
    // processes, Chromium and sockets, so two workers overlap that waiting with the other's CPU.
    maxWorkers: 2,
    // Files run one after another in a worker that keeps its imported modules, instead of each
    // file re-importing every source through vite in a fresh fork (that import was a third of the
    // suite's time). Nothing process-wide is left behind for the next file: each file starts its
    // own Atrium, servers, browsers and child processes on its own temp root and stops them in
    // afterAll; clocks are a FakeTime passed in, never a global or fake timers; no test sets env
    // it does not restore, signal handlers or log destinations; spies are restored after each test.
    // A file that must have a process of its own goes in a project with `isolate: true`.
    isolate: false,
    // The JSON report feeds scripts/test-summary.mjs, which prints the one closing count line.
    reporters: ["default", "json"],
    outputFile: { json: "test-results/vitest.json" },
  },
});
