/**
 * A check of a value against a schema Atrium did not write, stopped because going on would hold
 * the event loop past one of its budgets: the pattern matches it may spend (ADR 0104) or the
 * alternatives it may try (ADR 0157). Its message says what went past and what to do; callers
 * answer it as a refusal of the value, never as a failure of the server.
 */
export class CheckTooCostly extends Error {}
