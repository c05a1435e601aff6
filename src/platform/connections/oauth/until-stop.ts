import type { FetchLike } from "@modelcontextprotocol/client";
import { Conflict } from "../../../errors.ts";
import type { ServerLooks } from "../server-looks.ts";

/** The looks at servers of the two stores an OAuth connection's record can live in (record-home.ts). */
export interface ConnectionLooks {
  shared: ServerLooks;
  personal: ServerLooks;
}

/**
 * Runs one OAuth step that only looks at a remote server — a discovery, its metadata, a dynamic
 * client registration — as a look that only a graceful stop ends (adr/0122, amended): the look's
 * signal is handed to `step` for each request it sends (cutBy), and once it has aborted the step
 * answers 409 `stopping` naming `what` was cut, whatever a cut request failed with, not a refusal
 * of the server's. A step begun after the stop starts ended and sends nothing. An exchange of
 * credentials (a code redeemed, a token refreshed) is never run here: the drain lets it finish,
 * since its answer, once the server has given it, may be the only one (a spent code, a rotated
 * refresh token). Nor is a token refresh's discovery: requests the drain lets finish wait on it
 * (connection-tokens.ts); a step waiting on a discovery it shares with one stops waiting when its
 * own look ends (authorities.ts). A step that returns after its look ended answers 409 too when it
 * would keep nothing (a start makes no flow then, Authorizer.startWithin); an add whose record was
 * stored before the stop answers as stored.
 */
export function untilStop<T>(
  looks: ServerLooks,
  what: string,
  step: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  return looks.runUntilStop(async (signal) => {
    try {
      signal.throwIfAborted();
      return await step(signal);
    } catch (error) {
      if (signal.aborted) throw stoppedDuring(what);
      throw error;
    }
  });
}

/** The looks of the store a connection's record lives in: its owner's, or the workspace's. */
export function looksAt(looks: ConnectionLooks, at: { owner?: string | undefined }): ServerLooks {
  return at.owner === undefined ? looks.shared : looks.personal;
}

/**
 * Each request `fetch` sends ends when `signal` aborts, its body's read included (guarded-fetch.ts
 * destroys the request). The SDK's OAuth helpers pass no signal of their own, so no composite is
 * made on the way to the guarded fetch.
 */
export function cutBy(fetch: FetchLike, signal: AbortSignal): FetchLike {
  return (url, init) =>
    fetch(url, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, signal]) : signal });
}

/** What a step the stop cut answers: the code of work a shutdown refuses, naming the step. */
function stoppedDuring(what: string): Conflict {
  return new Conflict(
    "stopping",
    `Atrium is stopping, so ${what} was cut and nothing was recorded: send it again once Atrium is back.`,
  );
}
