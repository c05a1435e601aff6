import type { IncomingMessage, Server, ServerResponse } from "node:http";

/** How a drain ended: requests in flight when it began, those that finished, those cut off. */
export interface DrainCounts {
  inFlight: number;
  finished: number;
  forced: number;
}

/**
 * Graceful stop for the HTTP server (issue 10, Reliability 1; ADR 0023). It tracks the
 * requests in flight; `drain()` stops accepting connections, closes idle keep-alive ones,
 * lets in-flight requests finish with their real answer (each response then carries
 * `Connection: close` so its client does not send another on that connection), and after
 * the deadline, or at once on `force()`, destroys what remains.
 */
export class HttpDrain {
  private readonly active = new Set<ServerResponse>();
  private readonly handlers = new Set<Promise<unknown>>();
  private draining = false;
  private finished = 0;
  private forceNow: (() => void) | undefined;
  private forceRequested = false;
  private forcing = false;
  private stopUnwinding: (() => void) | undefined;

  constructor(private readonly server: Server) {
    // Prepended, so a response the app writes synchronously is still marked during a drain.
    server.prependListener("request", (_request: IncomingMessage, response: ServerResponse) => {
      this.active.add(response);
      if (this.draining) this.closeAfter(response);
      response.once("close", () => {
        this.active.delete(response);
        if (this.draining && !this.forcing) this.finished++;
      });
    });
  }

  /**
   * A request's handler. A connection cut off by the drain ends before its handler does: the
   * handler still unwinds (an upload removes its staging folder) and logs the request's line, so a
   * drain waits for it, a bounded while, before the process goes on to exit.
   */
  track(handler: Promise<unknown>): void {
    this.handlers.add(handler);
    // Inline rather than held in a `const`: tsx names a function held so with a property write each
    // time one is made, here on every request (≈ 0.9% of a files__info call's busy time; see the
    // front door's NodePost).
    handler.then(
      () => this.handlers.delete(handler),
      () => this.handlers.delete(handler),
    );
  }

  /** Requests being answered now. */
  inFlight(): number {
    return this.active.size;
  }

  /** Resolves once every connection is closed; at most `deadlineMs` after it began, then forced. */
  async drain(deadlineMs: number): Promise<DrainCounts> {
    this.draining = true;
    const inFlight = this.active.size;
    for (const response of this.active) this.closeAfter(response);
    let allClosed = false;
    const closed = new Promise<void>((resolve) =>
      this.server.close(() => {
        allClosed = true;
        resolve();
      }),
    );
    // Node closes idle keep-alive connections on close(); said here too because the drain
    // depends on it.
    this.server.closeIdleConnections();
    const cutOff = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, deadlineMs);
      this.forceNow = () => {
        clearTimeout(timer);
        resolve();
      };
      void closed.then(() => clearTimeout(timer));
    });
    if (this.forceRequested) this.forceNow?.();
    await Promise.race([closed, cutOff]);
    let forced = 0;
    if (!allClosed) {
      this.forcing = true;
      forced = this.active.size;
      this.server.closeAllConnections();
    }
    await closed;
    await this.unwound();
    return { inFlight, finished: this.finished, forced };
  }

  /**
   * Marks `response` so its client sends nothing more on its connection: `Connection: close`, or,
   * for an answer already under way (an SSE stream begun before the drain), which has said
   * keep-alive, its connection ended once it finishes, unless a request pipelined behind it is
   * still being answered there: that answer, marked itself, closes the connection after it.
   * Left alone, the connection sat idle until Node's keep-alive timeout and held the stop
   * (test/integration/mcp-front-door-drain.test.ts; test/unit/http/drain.test.ts "…pipelined behind it").
   */
  private closeAfter(response: ServerResponse): void {
    if (!response.headersSent) {
      response.setHeader("Connection", "close");
      return;
    }
    const socket = response.req.socket;
    response.once("finish", () => {
      const behind = [...this.active].some((other) => other !== response && other.req.socket === socket);
      // As Node closes a `Connection: close` answer's: once its bytes are out, not when the client
      // also ends its half, which one that keeps it open never does.
      if (!behind) socket.destroySoon();
    });
  }

  /** Cuts off what is still in flight now (a second signal). */
  force(): void {
    this.forceRequested = true;
    this.forceNow?.();
    this.stopUnwinding?.();
  }

  /** Resolves once every handler has ended, or after UNWIND_MS, or at once on `force()`. */
  private async unwound(): Promise<void> {
    if (this.handlers.size === 0 || this.forceRequested) return;
    let timer: NodeJS.Timeout | undefined;
    const cutOff = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, UNWIND_MS);
      this.stopUnwinding = resolve;
    });
    await Promise.race([Promise.allSettled([...this.handlers]), cutOff]);
    clearTimeout(timer);
  }
}

/**
 * How long a drain waits, once the connections are gone, for handlers still unwinding. They have
 * nobody to answer; a tool call is cancelled with its connection (ADR 0065), so this is cleanup.
 */
const UNWIND_MS = 5_000;
