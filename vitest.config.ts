import { defineConfig } from "vitest/config";

// biome-ignore lint/style/noDefaultExport: vitest reads the default export.
export default defineConfig({
  test: {
    testTimeout: 20_000,
    hookTimeout: 30_000,
    pool: "forks",
    // Vitest's default is one worker less than the cores, which is a single worker on a 2-core
    // machine: every file ran one after another. Most integration time is spent waiting on child
    // processes, Chromium and sockets, so two workers overlap that waiting with the other's CPU.
    maxWorkers: 2,
    // The JSON report feeds scripts/test-summary.mjs, which prints the one closing count line.
    reporters: ["default", "json"],
    outputFile: { json: "test-results/vitest.json" },
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: ["test/unit/**/*.test.ts"],
          // Unit files share a worker's module cache instead of each re-importing (and
          // re-transforming) the sources in a fresh fork: they hold no process-wide state (no
          // env or signal handlers left behind, no fake timers, spies restored after each test).
          isolate: false,
        },
      },
      {
        extends: true,
        test: {
          name: "integration",
          include: ["test/integration/**/*.test.ts"],
          // Likewise: each file starts its own Atrium, servers, browsers and child processes on
          // its own temp root and stops them in afterAll; the clock is a FakeTime passed in, never
          // a global, and no file sets env, signal handlers or log destinations. What they share
          // is the imported code, which is what a fresh fork per file paid to import again.
          isolate: false,
        },
      },
    ],
  },
});
