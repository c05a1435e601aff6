import { defineConfig } from "vitest/config";

// biome-ignore lint/style/noDefaultExport: vitest reads the default export.
export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    pool: "forks",
    // The JSON report feeds scripts/test-summary.mjs, which prints the one closing count line.
    reporters: ["default", "json"],
    outputFile: { json: "test-results/vitest.json" },
  },
});
