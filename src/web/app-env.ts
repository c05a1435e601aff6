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
    /**
     * The instance-wide body cap (`http.maxBodyBytes`), left for a route that answers its own
     * `413` in its own shape instead (the public OAuth endpoints, body-limit.ts), which caps its
     * body at the lower of this and its own limit.
     */
    maxBodyBytes?: number;
    /** Set when an Atrium access token authenticated the request: what the person granted its client. */
    grant?: { clientId: string; scopes: string[] };
  };
}
