import type {
  OAuthClientInformationFullSchema,
  OAuthClientMetadataSchema,
  OAuthMetadataSchema,
  OAuthProtectedResourceMetadataSchema,
  OAuthTokensSchema,
} from "@modelcontextprotocol/core";
import type { z } from "zod";

// The OAuth types the authorization server speaks in. `@modelcontextprotocol/core` exports
// only the zod schemas; v2 publishes the matching types from `server`/`client`, which are
// these same z.infer types. Inferring them here spares a dependency on the whole server
// package for five type aliases.

export type OAuthClientMetadata = z.infer<typeof OAuthClientMetadataSchema>;
export type OAuthClientInformationFull = z.infer<typeof OAuthClientInformationFullSchema>;
export type OAuthTokens = z.infer<typeof OAuthTokensSchema>;
export type OAuthMetadata = z.infer<typeof OAuthMetadataSchema>;
export type OAuthProtectedResourceMetadata = z.infer<typeof OAuthProtectedResourceMetadataSchema>;
