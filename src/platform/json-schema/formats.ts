import type { Ajv } from "ajv";
import type { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";

// ajv-formats is CommonJS with a default export; under NodeNext its callable is `.default`.
const addFormats = addFormatsModule as unknown as { default: (ajv: Ajv | Ajv2020) => void };

/**
 * Makes `ajv` check the standard `format`s (email, date-time, uri, …), as a schema's author
 * expects, instead of ignoring each with a console warning. ajv-formats' "url" is a fixed V8
 * RegExp that backtracks quadratically ("http://" then a run of ":" — over a second at 40,000
 * characters) and has lookaheads RE2 cannot take: it is known, and not checked (ADR 0064). The
 * others measured linear.
 */
export function checkFormats(ajv: Ajv | Ajv2020): void {
  addFormats.default(ajv);
  ajv.addFormat("url", true);
}
