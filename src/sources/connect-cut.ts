import type { FetchLike } from "@modelcontextprotocol/client";

/**
 * Ends the requests a remote client makes while it connects, and any it would make after: the
 * client library's own close cannot end a connect, whose version probe runs on the transport
 * before the client holds it, and may fall back to `initialize` after the probe failed
 * (test/integration/connections-races.test.ts "a disable behind a refresh answers while the
 * server never answers").
 *
 * Only the connect's requests are tied to the cut, and each stays tied, to the cut and to the
 * client's own signal, for as long as it lasts: a 2025 server's event stream, opened during the
 * connect and never awaited by it, must still end at the client's close
 * (test/unit/sources/connect-cut.test.ts). They are a handful per connect. Requests after the
 * connect carry the client's own signal untouched. `AbortSignal.any` over the long-lived cut would
 * have tied every request, but on Node 20 each composite it makes stays reachable from its
 * sources (about 50 bytes a call, for as long as the client lives).
 */
export class ConnectCut {
  private readonly controller = new AbortController();
  private connecting = true;

  /** `fetch` whose connect-time requests end at `abort()`, and which sends nothing after it. */
  fetch(inner: FetchLike): FetchLike {
    return (url, init) => {
      const cut = this.controller.signal;
      if (cut.aborted) return Promise.reject(cut.reason);
      if (!this.connecting) return inner(url, init);
      return inner(url, { ...init, signal: this.tied(init?.signal ?? undefined) });
    };
  }

  /** The connect settled: later requests are the client's own to end. */
  settled(): void {
    this.connecting = false;
  }

  abort(reason: Error): void {
    this.controller.abort(reason);
  }

  /** A signal that aborts when the cut or `signal` does. */
  private tied(signal: AbortSignal | undefined): AbortSignal {
    const tied = new AbortController();
    for (const source of signal ? [this.controller.signal, signal] : [this.controller.signal]) {
      if (source.aborted) {
        tied.abort(source.reason);
        break;
      }
      source.addEventListener("abort", () => tied.abort(source.reason), { once: true, signal: tied.signal });
    }
    return tied.signal;
  }
}
