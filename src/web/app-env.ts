import type { Principal } from "../identity/principal.ts";
import type { Admission } from "../workspace/gate.ts";

/** What middleware leaves on a request for the handlers after it. */
export interface AppEnv {
  Variables: {
    requestId: string;
    principal: Principal;
    admission: Admission;
    /** Set when an Atrium access token authenticated the request: what the person granted its client. */
    grant?: { clientId: string; scopes: string[] };
  };
}
