import { defineConfig } from "vitest/config";

// biome-ignore lint/style/noDefaultExport: vitest reads the default export.
export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    pool: "forks",
  },
});
