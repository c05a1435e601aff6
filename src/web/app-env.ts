import type { Principal } from "../identity/principal.ts";
import type { AccessCheck } from "../workspace/access-check.ts";
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
    /**
     * Set by the workspace gate with `admission`: whether the caller still has access, asked by a
     * store at the commit point of the write a route makes for them (adr/0154, amended).
     */
    access: AccessCheck;
    /** Set when an Atrium access token authenticated the request: what the person granted its client. */
    grant?: { clientId: string; scopes: string[] };
  };
}
