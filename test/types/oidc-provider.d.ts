// oidc-provider ships no types; these declare only what the tests use: the constructor, the
// request callback, the events and token models test/helpers/oauth-authorization-server.ts
// counts and revokes with, and the error a resource-indicator callback throws.
declare module "oidc-provider" {
  import type { IncomingMessage, ServerResponse } from "node:http";

  // biome-ignore lint/suspicious/noExplicitAny: its configuration object is large and untyped upstream.
  type Configuration = Record<string, any>;

  /** A stored token or grant model (AccessToken, RefreshToken, AuthorizationCode, Grant). */
  interface TokenModel {
    find(value: string, options?: { ignoreExpiration?: boolean }): Promise<{ grantId?: string } | undefined>;
    revokeByGrantId(grantId: string): Promise<void>;
    adapter: { destroy(id: string): Promise<void> };
  }

  // biome-ignore lint/style/noDefaultExport: the package's own export shape.
  export default class Provider {
    constructor(issuer: string, configuration: Configuration);
    callback(): (request: IncomingMessage, response: ServerResponse) => void;
    // biome-ignore lint/suspicious/noExplicitAny: each event passes its own untyped arguments.
    on(event: string, listener: (...args: any[]) => void): this;
    AccessToken: TokenModel;
    RefreshToken: TokenModel;
    AuthorizationCode: TokenModel;
    Grant: TokenModel;
  }

  export const errors: { InvalidTarget: new (description?: string) => Error };
}
