// Types for layers.mjs (plain Node so check-structure runs without tsx), for the tests.
export interface ImportEdge {
  from: string;
  to: string;
  line: number;
}
export interface Violation {
  file: string;
  line: number;
  message: string;
}
export const LAYERS: Record<string, number>;
export const KNOWN_UPWARD: string[];
export function crossAreaImports(srcDir: string): ImportEdge[];
export function layerViolations(
  srcDir: string,
  layers?: Record<string, number>,
  known?: string[],
): Violation[];
