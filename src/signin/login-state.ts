import { EncryptJWT, jwtDecrypt } from "jose";
import { readCookie, setCookie } from "../identity/session-cookie.ts";
import { type Clock, systemClock } from "../kernel/clock.ts";

/** How long a browser has to come back from the provider. */
export const LOGIN_STATE_TTL_SECONDS = 10 * 60;
/** Where the provider sends the browser back, the one page that reads the login state. */
export const CALLBACK_PATH = "/auth/callback";

const LOGIN_STATE_COOKIE = "atrium_login";
// Over https the name is `__Host-`, so the browser takes it only from this host with Secure,
// Path=/ and no Domain: a sibling subdomain cannot toss its own sealed login state (its own
// sign-in, stopped before the callback) into a victim's browser and sign them in as itself.
// `__Secure-` with Path=/auth/callback allowed exactly that (ADR 0072; do not bring it back).
const SECURE_LOGIN_STATE_COOKIE = "__Host-atrium_login";

/** What a sign-in remembers between sending the browser to the provider and its return. */
export interface LoginState {
  state: string;
  nonce: string;
  codeVerifier: string;
  /** A local path (checked by localReturnTo) to land on after sign-in. */
  returnTo: string;
}

/**
 * The login state lives in the browser that started the sign-in, in a short-lived HttpOnly
 * host-only cookie (Path=/, as `__Host-` demands), sealed with AES-256-GCM (a JWE with jose):
 * the browser can neither read the PKCE verifier and nonce nor change the return path, and the
 * callback needs no server-side record, so an abandoned sign-in leaves nothing on disk.
 */
export class LoginStateCookie {
  readonly name: string;

  constructor(
    private readonly key: Uint8Array,
    private readonly secure: boolean,
    private readonly now: Clock = systemClock,
  ) {
    this.name = secure ? SECURE_LOGIN_STATE_COOKIE : LOGIN_STATE_COOKIE;
  }

  /** The Set-Cookie value that keeps `state` for LOGIN_STATE_TTL_SECONDS. */
  async seal(state: LoginState): Promise<string> {
    const nowSeconds = Math.floor(this.now() / 1000);
    const sealed = await new EncryptJWT({ ...state })
      .setProtectedHeader({ alg: "dir", enc: "A256GCM" })
      .setIssuedAt(nowSeconds)
      .setExpirationTime(nowSeconds + LOGIN_STATE_TTL_SECONDS)
      .encrypt(this.key);
    return this.cookie(sealed, LOGIN_STATE_TTL_SECONDS);
  }

  /** The request's login state, or `undefined` when it is missing, tampered with or expired. */
  async open(request: Request): Promise<LoginState | undefined> {
    const sealed = readCookie(request, this.name);
    if (sealed === undefined) return undefined;
    try {
      const { payload } = await jwtDecrypt(sealed, this.key, {
        keyManagementAlgorithms: ["dir"],
        contentEncryptionAlgorithms: ["A256GCM"],
        currentDate: new Date(this.now()),
        requiredClaims: ["exp"],
      });
      const { state, nonce, codeVerifier, returnTo } = payload;
      if ([state, nonce, codeVerifier, returnTo].some((v) => typeof v !== "string")) return undefined;
      return { state, nonce, codeVerifier, returnTo } as LoginState;
    } catch {
      return undefined;
    }
  }

  /** The Set-Cookie value that deletes the login state: a sign-in's state is used at most once. */
  clear(): string {
    return this.cookie("", 0);
  }

  private cookie(value: string, maxAgeSeconds: number): string {
    return setCookie(this.name, value, { path: "/", maxAgeSeconds, secure: this.secure });
  }
}

/** Longer return paths are refused; an OAuth request that needs more keeps it server-side. */
export const MAX_RETURN_TO_CHARS = 2048;

/**
 * `return_to` as a path on this instance, or `/`. Only `/` followed by something other than
 * `/` or `\` (which a browser would read as another host), in printable ASCII with no
 * backslash (a browser reads `\` as `/`) and no control characters (which a browser strips,
 * turning `/\t/evil` into `//evil`), is kept.
 */
export function localReturnTo(value: string | undefined): string {
  if (value === undefined || value.length > MAX_RETURN_TO_CHARS) return "/";
  if (!/^\/(?![/\\])[\x21-\x7e]*$/.test(value) || value.includes("\\")) return "/";
  // Belt and braces: resolved against any origin, it must stay on that origin.
  const base = "http://atrium.invalid";
  return new URL(value, base).origin === base ? value : "/";
}
