import { fileURLToPath } from "node:url";

// Resolved from this file rather than process.cwd(), so `node --import tsx bench/run.ts` works from anywhere.
export const repoRoot = fileURLToPath(new URL("../../", import.meta.url));
export const benchDir = fileURLToPath(new URL("../", import.meta.url));
