// Collects every 2xx response time (ms, float) into a growable typed array: a few hundred thousand
// samples per run, cheap to append to and to sort once at the end.
export class LatencyRecorder {
  #samples = new Float64Array(1 << 16);
  #count = 0;

  get count(): number {
    return this.#count;
  }

  record(ms: number): void {
    this.#reserve(1);
    this.#samples[this.#count++] = ms;
  }

  /** Adds another recorder's samples (the slices of one target, measured between other targets'). */
  append(other: LatencyRecorder): void {
    this.#reserve(other.#count);
    this.#samples.set(other.#samples.subarray(0, other.#count), this.#count);
    this.#count += other.#count;
  }

  sorted(): Float64Array {
    return this.#samples.slice(0, this.#count).sort();
  }

  #reserve(extra: number): void {
    if (this.#count + extra <= this.#samples.length) return;
    let size = this.#samples.length * 2;
    while (size < this.#count + extra) size *= 2;
    const grown = new Float64Array(size);
    grown.set(this.#samples.subarray(0, this.#count));
    this.#samples = grown;
  }
}
