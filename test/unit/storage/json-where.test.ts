import { describe, expect, it } from "vitest";
import { describeJsonFault, jsonFaultOffset } from "../../../src/storage/json-where.ts";

// V8's parse message quotes the text around a fault; a stored file's fault is told by place only.

describe("where a JSON text stops being JSON", () => {
  it.for([
    ['{"secret":sk-live-AB}', "line 1, column 11"],
    ['{\n  "a": tru\n}', "line 2, column 8"],
    ['{"a":1}\n\n{', "line 3, column 1"],
    ['{"a":1,}', "line 1, column 8"],
    ['["\\x"]', "line 1, column 4"],
    ['"\t"', "line 1, column 2"],
    ["01", "line 1, column 2"],
    ["\uFEFF{}", "line 1, column 1"],
    ["{", "it ends before its JSON does"],
    ["", "it ends before its JSON does"],
    ['"\\u12', "line 1, column 3"],
  ] as const)("%j: %s", ([text, where]) => {
    expect(describeJsonFault(text)).toBe(where);
    expect(() => JSON.parse(text)).toThrow(SyntaxError);
  });

  it("finds no fault where JSON.parse finds none", () => {
    for (const text of [
      '{"a":[1,-2.5e+3,"x\\\\y\\u00e9",true,false,null,{"b":{}}],"c":[]}',
      " \n\t[ ]\r\n",
      "0",
      '"\uD800"',
      "-0.0E-0",
    ]) {
      expect(() => JSON.parse(text)).not.toThrow();
      expect(jsonFaultOffset(text)).toBeUndefined();
    }
  });

  it("nesting deeper than the stack is a fault at its start, not a crash", () => {
    expect(jsonFaultOffset("[".repeat(1_000_000))).toBe(0);
  });
});
