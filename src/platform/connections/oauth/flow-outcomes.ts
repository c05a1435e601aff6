import { toldOAuthCode } from "../remote-failure.ts";
import { FLOW_TTL_MS } from "./flows.ts";

/** The answer of a callback or a go_url, for its page. */
export interface FlowOutcome {
  status: 200 | 400 | 403 | 409 | 502;
  title: string;
  message: string;
}

/** The flow a go_url or callback names is unknown to this process, or has expired. */
export function expiredOutcome(): FlowOutcome {
  return {
    status: 400,
    title: "Unknown or expired",
    message: `This authorization is unknown or older than ${FLOW_TTL_MS / 60_000} minutes; start it again from Atrium.`,
  };
}

/** The flow was already spent by a callback: a replay, or a second tab. */
export function usedOutcome(): FlowOutcome {
  return {
    status: 400,
    title: "Already used",
    message: "This authorization was already used; start a new one from Atrium.",
  };
}

/**
 * A newer start of the same connection, by the same person (or a newer step-up), replaced this
 * flow: one sign-in of a connection waits per person at a time (flows.ts).
 */
export function replacedOutcome(): FlowOutcome {
  return {
    status: 400,
    title: "Replaced",
    message:
      "A newer authorization of this connection was started after this one and replaced it; finish the newest link, or start again from Atrium.",
  };
}

/**
 * The tokens were activated, but the graceful stop cut the first photograph of a connection still
 * pending (a look, adr/0122): it is not served until a sign-in photographs it.
 */
export function stoppingOutcome(name: string): FlowOutcome {
  return {
    status: 409,
    title: "Atrium is stopping",
    message: `Connection "${name}" is authorized, but Atrium began to stop before it read the server's tools, so the connection is not in use yet: once Atrium is back, start its authorization again to finish.`,
  };
}

/**
 * The authorization server sent the browser back with an `error`: told by its code alone, one the
 * SDK knows or `server_error`, never its `error_description`. The page is on Atrium's origin, and
 * whichever server a connection names wrote that text: a "sign in again at …" with right-to-left
 * overrides read as Atrium's own words (ADR 0067;
 * test/integration/connections-oauth-hostile.test.ts "error_description").
 */
export function refusedOutcome(error: string): FlowOutcome {
  return {
    status: 400,
    title: "Authorization refused",
    message: `The authorization server refused this authorization (${toldOAuthCode(error)}); what it wrote is not repeated here. Start again from Atrium.`,
  };
}
