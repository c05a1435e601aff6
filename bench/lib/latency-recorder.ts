// Collects every 2xx response time (ms, float) into a growable typed array: a few hundred thousand
// samples per run, cheap to append to and to sort once at the end.
export class LatencyRecorder {
  #samples = new Float64Array(1 << 16);
  #count = 0;

  record(ms: number): void {
    if (this.#count === this.#samples.length) {
      const grown = new Float64Array(this.#samples.length * 2);
      grown.set(this.#samples);
      this.#samples = grown;
    }
    this.#samples[this.#count++] = ms;
  }

  sorted(): Float64Array {
    return this.#samples.slice(0, this.#count).sort();
  }
}
