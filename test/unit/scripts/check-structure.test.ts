import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";

// scripts/check-structure.mjs's check (f), run on a scratch root holding one file in src/.
const REPO = resolve(import.meta.dirname, "../../..");
const roots: string[] = [];

function lengthCheck(name: string, text: string): string {
  const root = mkdtempSync(join(tmpdir(), "atrium-structure-"));
  roots.push(root);
  mkdirSync(join(root, "scripts", "lib"), { recursive: true });
  mkdirSync(join(root, "src"));
  copyFileSync(join(REPO, "scripts", "check-structure.mjs"), join(root, "scripts", "check-structure.mjs"));
  copyFileSync(join(REPO, "scripts", "lib", "layers.mjs"), join(root, "scripts", "lib", "layers.mjs"));
  symlinkSync(join(REPO, "node_modules"), join(root, "node_modules"));
  writeFileSync(join(root, "src", name), text);
  const run = spawnSync("node", [join(root, "scripts", "check-structure.mjs")], { encoding: "utf8" });
  return run.stdout
    .split("\n")
    .filter((line) => line.includes("(f)") || line.includes("[f]"))
    .join("\n");
}

const lines = (n: number) => Array.from({ length: n }, (_, k) => `export const v${k} = ${k};`);

afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

describe("the structure check's file length (f)", () => {
  it("passes a file of 400 lines and fails one of 401, its last line without a newline counted", () => {
    expect(lengthCheck("at.ts", `${lines(400).join("\n")}\n`)).toMatch(/^ok {3}\(f\)/);
    expect(lengthCheck("past.ts", lines(401).join("\n"))).toMatch(/FAIL \(f\)[\s\S]*401 lines/);
  });

  it("counts every line break TypeScript takes for one: a module whose lines end in CR", () => {
    expect(lengthCheck("big.ts", `${lines(600).join("\r")}\r`)).toMatch(/FAIL \(f\)/);
  });

  it("reads .tsx and .jsx modules too", () => {
    expect(lengthCheck("big.tsx", `${lines(600).join("\n")}\n`)).toMatch(/FAIL \(f\)/);
    expect(lengthCheck("big.jsx", `${lines(600).join("\n")}\n`)).toMatch(/FAIL \(f\)/);
  });
});
