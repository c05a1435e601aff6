// Typed errors. Each carries the fields a caller needs and a machine code; the edge
// (http/error-response.ts for REST, the router for MCP) maps them to the wire in one place.

export class AtriumError extends Error {
  constructor(
    readonly code: string,
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

export class InvalidInput extends AtriumError {
  constructor(message: string) {
    super("invalid_input", 400, message);
  }
}

export class Unauthenticated extends AtriumError {
  constructor(
    message = "Sign in first: this request carries no credential Atrium accepts.",
    /** The `WWW-Authenticate` value that tells a client how to get a credential. */
    readonly challenge = "Bearer",
  ) {
    super("unauthenticated", 401, message);
  }
}

export class Forbidden extends AtriumError {
  constructor(message: string) {
    super("forbidden", 403, message);
  }
}

/** A person an org admin deactivated: every request of theirs, and a call of theirs cut short by it. */
export class AccountDeactivated extends Forbidden {
  constructor() {
    super("This account has been deactivated by an org admin.");
  }
}

/** The token is good but lacks a scope this call needs (RFC 6750 §3.1), so a client can step up. */
export class InsufficientScope extends AtriumError {
  constructor(
    message: string,
    readonly challenge: string,
  ) {
    super("insufficient_scope", 403, message);
  }
}

// One body for "does not exist", "archived", "malformed id" and "not a member", so that a
// response never tells a stranger a workspace exists (test/integration/wall-suite.ts).
export class WorkspaceNotFound extends AtriumError {
  constructor(readonly workspaceId: string) {
    super("workspace_not_found", 404, "No workspace at this address that you are a member of.");
  }
}

export class NotFound extends AtriumError {
  constructor(code: string, message: string) {
    super(code, 404, message);
  }
}

export class Conflict extends AtriumError {
  constructor(code: string, message: string) {
    super(code, 409, message);
  }
}

export class PayloadTooLarge extends AtriumError {
  constructor(
    readonly limitBytes: number,
    message = `The body is larger than the limit of ${limitBytes} bytes.`,
  ) {
    super("payload_too_large", 413, message);
  }
}

/** A precondition the request set (`If-Match`) does not hold for what is stored (RFC 9110 §15.5.13). */
export class PreconditionFailed extends AtriumError {
  constructor(message: string) {
    super("precondition_failed", 412, message);
  }
}

/** The body is sent in a format this route does not read (RFC 9110 §15.5.16). */
export class UnsupportedMediaType extends AtriumError {
  constructor(message: string) {
    super("unsupported_media_type", 415, message);
  }
}

/** One caller holds as many of something as it may at once: close one, then ask again. */
export class TooManyRequests extends AtriumError {
  constructor(code: string, message: string) {
    super(code, 429, message);
  }
}

/**
 * The server's disk or quota is full, or a file met a limit on its size (the process's, the
 * filesystem's), so a write could not be stored (RFC 4918 §11.5). Nothing of it was kept; the same
 * request can succeed once an operator frees space, so it is neither the client's mistake nor a bug.
 */
export class InsufficientStorage extends AtriumError {
  constructor() {
    super(
      "insufficient_storage",
      507,
      "The server's storage is full (or at its limit for one file), so nothing was stored. Try again once space has been freed.",
    );
  }
}

/**
 * The status a request is logged with when its client went away before the answer (nginx's
 * 499): the answer reaches no one, and it is not Atrium's failure. REST and MCP log it alike.
 */
export const CLIENT_CLOSED_REQUEST = 499;

/** The client closed the connection before its request was whole. */
export class ClientClosedRequest extends AtriumError {
  constructor() {
    super(
      "client_closed_request",
      CLIENT_CLOSED_REQUEST,
      "The connection closed before the request's body was complete.",
    );
  }
}

/** A problem with the instance's configuration or on-disk state, found at boot. */
export class BootError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BootError";
  }
}
