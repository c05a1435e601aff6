import type { FetchLike } from "@modelcontextprotocol/client";

/**
 * Ends the requests a remote client makes while it connects, and any it would make after: the
 * client library's own close cannot end a connect, whose version probe runs on the transport
 * before the client holds it, and may fall back to `initialize` after the probe failed
 * (test/integration/connections-races.test.ts "a disable behind a refresh answers while the
 * server never answers").
 *
 * Only the connect's requests are tied to the cut, each by a listener removed once the connect
 * settles; from then on the client's own close ends its requests. `AbortSignal.any` over the
 * long-lived cut would have done it for every request, but on Node 20 each composite it makes
 * stays reachable from its sources (about 50 bytes a call, for as long as the client lives).
 */
export class ConnectCut {
  private readonly controller = new AbortController();
  private readonly links = new Set<() => void>();
  private connecting = true;

  /** `fetch` whose requests end at `abort()`, and which sends nothing after it. */
  fetch(inner: FetchLike): FetchLike {
    return (url, init) => {
      const cut = this.controller.signal;
      if (cut.aborted) return Promise.reject(cut.reason);
      if (!this.connecting) return inner(url, init);
      return inner(url, { ...init, signal: this.tied(init?.signal ?? undefined) });
    };
  }

  /** The connect settled: its requests are answered, and the client's own close ends the rest. */
  settled(): void {
    this.connecting = false;
    for (const unlink of this.links) unlink();
    this.links.clear();
  }

  abort(reason: Error): void {
    this.controller.abort(reason);
  }

  /** A signal that aborts when the cut or `signal` does, linked until the connect settles. */
  private tied(signal: AbortSignal | undefined): AbortSignal {
    const tied = new AbortController();
    for (const source of signal ? [this.controller.signal, signal] : [this.controller.signal]) {
      if (source.aborted) {
        tied.abort(source.reason);
        break;
      }
      const follow = () => tied.abort(source.reason);
      source.addEventListener("abort", follow, { once: true });
      this.links.add(() => source.removeEventListener("abort", follow));
    }
    return tied.signal;
  }
}
