import type { IdentityProvider } from "../../src/identity/provider.ts";
import { createTestProvider } from "./atrium.ts";
import { type Gate, gate } from "./gate.ts";

/** The header that makes a request wait in sign-in until the test lets it on. */
export const HOLD_HEADER = "x-hold-sign-in";

/**
 * The test identity provider, except that a request saying HOLD_HEADER waits in it: `reached`
 * opens once one has come, and `release` lets it on; `reset` arms both again for the next request.
 */
export function heldSignIn(): {
  provider: IdentityProvider;
  reached: () => Promise<void>;
  release: () => void;
  reset: () => void;
} {
  const plain = createTestProvider();
  let reached: Gate = gate();
  let held: Gate = gate();
  return {
    provider: {
      name: "test",
      async authenticate(request, context) {
        if (request.headers.get(HOLD_HEADER) !== null) {
          reached.open();
          await held.promise;
        }
        return plain.authenticate(request, context);
      },
    },
    reached: () => reached.promise,
    release: () => held.open(),
    reset: () => {
      reached = gate();
      held = gate();
    },
  };
}
