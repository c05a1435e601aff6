import type { Readable } from "node:stream";

// Keeps the last few KB a child printed: enough to explain a failed start, bounded so a chatty
// server cannot grow the bench's memory during a long run.
export class OutputTail {
  #text = "";

  constructor(private readonly limit = 8_192) {}

  follow(stream: Readable | null): void {
    stream?.setEncoding("utf8");
    stream?.on("data", (chunk: string) => {
      this.#text = (this.#text + chunk).slice(-this.limit);
    });
  }

  toString(): string {
    return this.#text.trim();
  }
}
