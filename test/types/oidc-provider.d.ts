// oidc-provider ships no types; the tests use only its constructor and request callback.
declare module "oidc-provider" {
  import type { IncomingMessage, ServerResponse } from "node:http";

  // biome-ignore lint/suspicious/noExplicitAny: its configuration object is large and untyped upstream.
  type Configuration = Record<string, any>;
  // biome-ignore lint/style/noDefaultExport: the package's own export shape.
  export default class Provider {
    constructor(issuer: string, configuration: Configuration);
    callback(): (request: IncomingMessage, response: ServerResponse) => void;
  }
}
