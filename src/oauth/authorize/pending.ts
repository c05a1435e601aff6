import { createHmac, hkdfSync } from "node:crypto";
import { equalSecrets, randomSecret } from "../../crypto/secrets.ts";
import { type Clock, systemClock } from "../../kernel/clock.ts";
import { KeyedLock } from "../../storage/keyed-lock.ts";
import type { StorageLayout } from "../../storage/paths.ts";
import { JsonRecords } from "../../storage/records.ts";
import type { RequestedAccess } from "./authorization-request.ts";

/** How long a person has to decide on a consent page. */
export const PENDING_TTL_MS = 10 * 60 * 1000;

export type Decision = "approve" | "deny";

/** An authorization request waiting for the person's decision: what the consent page carries. */
export interface PendingAuthorization extends RequestedAccess {
  id: string;
  clientId: string;
  principalId: string;
  expiresAt: number;
}

/** What is stored once a request is answered: only the decision, by the request's id. */
interface StoredDecision {
  decision: Decision;
  expiresAt: number;
}

export type DecisionOutcome =
  | { kind: "decided"; pending: PendingAuthorization }
  | { kind: "expired" }
  | { kind: "conflict"; earlier: Decision };

const REQUEST_ID = /^[A-Za-z0-9_-]{32}$/;

/**
 * Consent requests. A request is sealed into its consent page (its fields and an HMAC with
 * a key only this instance holds), so showing the page — which any web page can make a
 * signed-in browser do by navigation — writes nothing and costs no disk (issue 10,
 * Security 8). Only an answer, a same-origin POST by the person asked, stores a record:
 * the decision, so that a repeated identical decision (a double-submitted form, a reload)
 * gives the same answer and a contrary one is refused, across restarts. The authorization
 * code for a request is derived from its id with another key, so an approval can be
 * answered twice with the same code without the code itself ever being stored.
 */
export class PendingAuthorizations {
  private readonly records: JsonRecords<StoredDecision>;
  private readonly locks = new KeyedLock();
  private readonly codeKey: Buffer;
  private readonly sealKey: Buffer;

  constructor(
    layout: StorageLayout,
    secret: string,
    private readonly now: Clock = systemClock,
  ) {
    this.records = new JsonRecords(layout, "oauth/requests");
    this.codeKey = Buffer.from(hkdfSync("sha256", secret, "", "atrium oauth authorization code", 32));
    this.sealKey = Buffer.from(hkdfSync("sha256", secret, "", "atrium oauth consent request", 32));
  }

  /** A new request and its sealed form, for the consent page; nothing is written. */
  create(request: Omit<PendingAuthorization, "id" | "expiresAt">): {
    pending: PendingAuthorization;
    sealed: string;
  } {
    const pending = { ...request, id: randomSecret(24), expiresAt: this.now() + PENDING_TTL_MS };
    const body = Buffer.from(JSON.stringify(pending)).toString("base64url");
    return { pending, sealed: `${body}.${this.mac(body)}` };
  }

  /** The request a consent page carried, or `undefined` if it was altered, forged or has expired. */
  open(sealed: string): PendingAuthorization | undefined {
    const [body, mac, ...rest] = sealed.split(".");
    if (body === undefined || mac === undefined || rest.length > 0) return undefined;
    if (!equalSecrets(mac, this.mac(body))) return undefined;
    const pending = JSON.parse(Buffer.from(body, "base64url").toString("utf8")) as PendingAuthorization;
    if (!REQUEST_ID.test(pending.id) || pending.expiresAt <= this.now()) return undefined;
    return pending;
  }

  async decide(pending: PendingAuthorization, decision: Decision): Promise<DecisionOutcome> {
    if (pending.expiresAt <= this.now()) return { kind: "expired" };
    return this.locks.run(pending.id, async () => {
      const earlier = await this.records.get(pending.id);
      if (earlier && earlier.decision !== decision) return { kind: "conflict", earlier: earlier.decision };
      if (!earlier) await this.records.put(pending.id, { decision, expiresAt: pending.expiresAt });
      return { kind: "decided", pending };
    });
  }

  codeFor(pending: PendingAuthorization): string {
    return createHmac("sha256", this.codeKey).update(pending.id).digest("base64url");
  }

  /** Removes decisions whose request has expired; at boot and hourly. */
  async sweep(): Promise<void> {
    for (const id of await this.records.ids()) {
      const stored = await this.records.get(id).catch(() => undefined);
      if (!stored || stored.expiresAt <= this.now()) await this.records.delete(id);
    }
  }

  private mac(body: string): string {
    return createHmac("sha256", this.sealKey).update(body).digest("base64url");
  }
}
