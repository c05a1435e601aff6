import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { expect, it } from "vitest";

// docs/rest.md's error table lists every code an Atrium error carries to a caller, as
// route-docs.test.ts holds the route tables to the routes. Codes are read with the TypeScript
// parser: the first argument, a string literal, of `new X(…)` for X in AtriumError's family, of
// `super(…)` in such a class, and of `errorBody(…)`.

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) return sourceFiles(full);
    return full.endsWith(".ts") ? [full] : [];
  });
}

function errorCodes(srcDir: string): Map<string, string> {
  const sources = sourceFiles(srcDir).map((file) =>
    ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true),
  );
  const parents = new Map<string, string>();
  const visitAll = (visit: (node: ts.Node, source: ts.SourceFile) => void) => {
    for (const source of sources) {
      const walk = (node: ts.Node): void => {
        visit(node, source);
        ts.forEachChild(node, walk);
      };
      walk(source);
    }
  };
  visitAll((node) => {
    if (!ts.isClassDeclaration(node) || !node.name) return;
    const base = node.heritageClauses?.find((c) => c.token === ts.SyntaxKind.ExtendsKeyword)?.types[0];
    if (base) parents.set(node.name.text, base.expression.getText());
  });
  const isAtriumError = (name: string): boolean => {
    for (let at: string | undefined = name; at !== undefined; at = parents.get(at)) {
      if (at === "AtriumError") return true;
    }
    return false;
  };
  const codes = new Map<string, string>();
  visitAll((node, source) => {
    if (!ts.isCallExpression(node) && !ts.isNewExpression(node)) return;
    const [first] = node.arguments ?? [];
    if (!first || !ts.isStringLiteral(first) || !/^[a-z]+(_[a-z]+)*$/.test(first.text)) return;
    const callee = node.expression;
    let carriesCode = false;
    if (ts.isNewExpression(node) && ts.isIdentifier(callee)) carriesCode = isAtriumError(callee.text);
    else if (callee.kind === ts.SyntaxKind.SuperKeyword) {
      let owner: ts.Node | undefined = node.parent;
      while (owner && !ts.isClassDeclaration(owner)) owner = owner.parent;
      carriesCode = owner !== undefined && isAtriumError((owner as ts.ClassDeclaration).name?.text ?? "");
    } else if (ts.isIdentifier(callee)) carriesCode = callee.text === "errorBody";
    if (carriesCode && !codes.has(first.text)) {
      const { line } = source.getLineAndCharacterOfPosition(node.getStart());
      codes.set(first.text, `${source.fileName}:${line + 1}`);
    }
  });
  return codes;
}

it("docs/rest.md's error table lists every error code a caller can be answered", () => {
  const codes = errorCodes("src");
  expect(codes.size).toBeGreaterThan(40);
  expect(codes.get("idempotency_conflict")).toMatch(/idempotency\.ts/);
  const docs = readFileSync("docs/rest.md", "utf8");
  const table = docs.split("\n").filter((line) => /^\| `\d{3}` \|/.test(line));
  const missing = [...codes]
    .filter(([code]) => !table.some((row) => row.includes(`\`${code}\``)))
    .map(([code, where]) => `${code} (${where}) is not in docs/rest.md's error table`);
  expect(missing).toEqual([]);
});
