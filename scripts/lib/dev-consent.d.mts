// Types for dev-consent.mjs (plain Node so the harness runs without tsx), for the tests.

export function approveAsDeveloper(authorizationUrl: string, base: string): Promise<string>;
