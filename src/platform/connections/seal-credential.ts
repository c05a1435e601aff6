import { InvalidInput } from "../../errors.ts";
import type { AuthRequest, StoredAuth } from "./model.ts";
import { type CredentialVault, QUERY_VALUE_FIELD, STATIC_VALUE_FIELD } from "./remote.ts";

/** Seals a new connection's credential (workspace and personal alike) and answers the stored reference. */
export async function sealCredential(
  vault: Pick<CredentialVault, "put">,
  id: string,
  auth: AuthRequest,
): Promise<StoredAuth> {
  if (auth.kind === "oauth") {
    // An OAuth connection has no credential to seal at add: both services add it by addOAuth.
    throw new InvalidInput('"auth.kind" "oauth" is authorized at its go_url; it has nothing to seal here.');
  }
  if (auth.kind === "none") return auth;
  if (auth.kind === "query") {
    return {
      kind: "query",
      param: auth.param,
      credential: await vault.put(id, QUERY_VALUE_FIELD, auth.value),
    };
  }
  return {
    kind: "static",
    header: auth.header,
    credential: await vault.put(id, STATIC_VALUE_FIELD, auth.value),
  };
}
