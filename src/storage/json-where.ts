// Where a JSON text stops being JSON, as a line and column, without any of its text. V8's
// SyntaxError message quotes what surrounds the fault (`Unexpected token 's', ..."{"secret":sk-l"...`)
// and gives a position only for some faults; a file that holds a secret must not be echoed into
// a log or a terminal, so the place is found here instead.

/** The 0-based offset of the first character at which `text` is not JSON; `undefined` when it is. */
export function jsonFaultOffset(text: string): number | undefined {
  const scan = new Scan(text);
  try {
    scan.value();
    scan.space();
    if (scan.at < text.length) return scan.at;
    return undefined;
  } catch (error) {
    if (error instanceof Fault) return error.at;
    // Nesting deeper than the stack: the place is unknown, but it is not JSON we can read.
    if (error instanceof RangeError) return 0;
    throw error;
  }
}

/** "line L, column C" (1-based) of the first fault in `text`, or of its end when it stops short. */
export function describeJsonFault(text: string): string {
  const offset = jsonFaultOffset(text) ?? text.length;
  if (offset >= text.length) return "it ends before its JSON does";
  const before = text.slice(0, offset);
  const line = before.split("\n").length;
  const column = offset - (before.lastIndexOf("\n") + 1) + 1;
  return `line ${line}, column ${column}`;
}

class Fault {
  constructor(readonly at: number) {}
}

const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const HEX4 = /[0-9a-fA-F]{4}/y;
const LITERALS = ["true", "false", "null"];

/** A recursive-descent check of RFC 8259's grammar; it builds nothing. */
class Scan {
  at = 0;

  constructor(private readonly text: string) {}

  space(): void {
    while (this.at < this.text.length && " \t\n\r".includes(this.text[this.at] as string)) this.at += 1;
  }

  value(): void {
    this.space();
    const c = this.text[this.at];
    if (c === "{") this.object();
    else if (c === "[") this.array();
    else if (c === '"') this.string();
    else if (c === "-" || (c !== undefined && c >= "0" && c <= "9")) this.number();
    else this.literal();
  }

  private literal(): void {
    const word = LITERALS.find((literal) => this.text.startsWith(literal, this.at));
    if (!word) throw new Fault(this.at);
    this.at += word.length;
  }

  private object(): void {
    this.at += 1;
    this.space();
    if (this.text[this.at] === "}") {
      this.at += 1;
      return;
    }
    for (;;) {
      this.space();
      if (this.text[this.at] !== '"') throw new Fault(this.at);
      this.string();
      this.space();
      if (this.text[this.at] !== ":") throw new Fault(this.at);
      this.at += 1;
      this.value();
      if (this.endOf("}")) return;
    }
  }

  private array(): void {
    this.at += 1;
    this.space();
    if (this.text[this.at] === "]") {
      this.at += 1;
      return;
    }
    for (;;) {
      this.value();
      if (this.endOf("]")) return;
    }
  }

  /** After a member or element: `,` goes on (false), `close` ends (true), anything else is a fault. */
  private endOf(close: string): boolean {
    this.space();
    const c = this.text[this.at];
    this.at += 1;
    if (c === ",") return false;
    if (c === close) return true;
    throw new Fault(this.at - 1);
  }

  private string(): void {
    this.at += 1;
    for (;;) {
      const c = this.text[this.at];
      if (c === undefined || c < " ") throw new Fault(this.at);
      this.at += 1;
      if (c === '"') return;
      if (c !== "\\") continue;
      const escaped = this.text[this.at];
      if (escaped === "u") {
        HEX4.lastIndex = this.at + 1;
        if (!HEX4.test(this.text)) throw new Fault(this.at);
        this.at += 5;
      } else if (escaped !== undefined && '"\\/bfnrt'.includes(escaped)) {
        this.at += 1;
      } else {
        throw new Fault(this.at);
      }
    }
  }

  private number(): void {
    NUMBER.lastIndex = this.at;
    if (!NUMBER.test(this.text)) throw new Fault(this.at);
    this.at = NUMBER.lastIndex;
  }
}
