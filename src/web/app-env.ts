import type { Principal } from "../identity/principal.ts";
import type { Admission } from "../workspace/gate.ts";

/** What middleware leaves on a request for the handlers after it. */
export interface AppEnv {
  Variables: {
    requestId: string;
    principal: Principal;
    admission: Admission;
    /**
     * Admits the request to its workspace again, replacing `admission`: what reading a body calls
     * once the body has arrived (json-body.ts), since its sender chose how long that took.
     */
    admitAgain?: () => void;
    /** Set when an Atrium access token authenticated the request: what the person granted its client. */
    grant?: { clientId: string; scopes: string[] };
  };
}
