/**
 * The work's outcome, or the signal's reason once it aborts: a caller stops waiting for work that
 * ignores its signal (a platform tool, a remote server that stopped answering). Most platform calls
 * end within the event-loop turn they start in, and an abort listener on the SDK's per-request
 * signal was ≈ 9% of a `files__info` call's CPU (adr/0097): so the wait listens only once the work
 * outlives its turn, and an abort before then is seen when it starts listening or when the work
 * ends — whichever comes first, as a listener added at once would have seen it. The work's own
 * later failure is dropped, never left unhandled.
 */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const wait = new AbortWait(signal, reject);
    work.then(
      (value) => {
        if (wait.settle()) resolve(value);
      },
      (error: unknown) => {
        if (wait.settle()) reject(error);
      },
    );
    setImmediate(listenIfUnsettled, wait);
  });
}

function listenIfUnsettled(wait: AbortWait): void {
  wait.listen();
}

/**
 * Rejects with the signal's reason when it aborts. A class rather than a named closure: the
 * sources run through tsx, which names each named closure with a property write as it is made,
 * here on every platform call.
 */
class AbortWait {
  private settled = false;
  private listening = false;

  constructor(
    private readonly signal: AbortSignal,
    private readonly reject: (reason: unknown) => void,
  ) {}

  /** Called once the work has outlived the turn it started in. */
  listen(): void {
    if (this.settled) return;
    if (this.signal.aborted) {
      this.handleEvent();
      return;
    }
    this.listening = true;
    this.signal.addEventListener("abort", this);
  }

  /** The work ended: whether its outcome is the answer (false when the signal aborted first). */
  settle(): boolean {
    this.settled = true;
    if (this.listening) this.signal.removeEventListener("abort", this);
    if (!this.signal.aborted) return true;
    this.handleEvent();
    return false;
  }

  handleEvent(): void {
    this.reject(this.signal.reason);
  }
}
