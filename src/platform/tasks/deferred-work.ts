import type { Logger } from "../../log.ts";

/**
 * Work a read found that calls tools (a crash's leftover result files): held until the app is
 * ready — a dispatch before then would build a workspace's registry before every app has
 * started — then done one piece at a time in the background, so no reader waits on it. A stop
 * waits for the piece under way and drops the rest: what each was for is still on disk, and the
 * next read finds it again.
 */
export class DeferredWork {
  private readonly queue: { what: string; work: () => Promise<void> }[] = [];
  private started = false;
  private stopped = false;
  private draining?: Promise<void>;

  constructor(private readonly log: Logger) {}

  add(what: string, work: () => Promise<void>): void {
    if (this.stopped) return;
    this.queue.push({ what, work });
    this.drain();
  }

  /** Tools may be called from now on. */
  start(): void {
    this.started = true;
    this.drain();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.queue.length = 0;
    await this.draining;
  }

  private drain(): void {
    if (!this.started || this.stopped || this.draining) return;
    this.draining = (async () => {
      for (let next = this.queue.shift(); next; next = this.stopped ? undefined : this.queue.shift()) {
        try {
          await next.work();
        } catch (error) {
          this.log.error({ err: error }, `${next.what} failed; tried again at the next read`);
        }
      }
    })().finally(() => {
      this.draining = undefined;
      // Added while the last piece ended, after the loop looked.
      if (this.queue.length > 0) this.drain();
    });
  }
}
