import { createHmac, hkdfSync } from "node:crypto";
import { randomSecret } from "../../crypto/secrets.ts";
import { KeyedLock } from "../../storage/keyed-lock.ts";
import type { StorageLayout } from "../../storage/paths.ts";
import { JsonRecords } from "../../storage/records.ts";
import type { RequestedAccess } from "./authorization-request.ts";

/** How long a person has to decide on a consent page. */
export const PENDING_TTL_MS = 10 * 60 * 1000;

export type Decision = "approve" | "deny";

/** An authorization request waiting for (or holding) the person's decision. */
export interface PendingAuthorization extends RequestedAccess {
  id: string;
  clientId: string;
  principalId: string;
  expiresAt: number;
  decision?: Decision;
}

export type DecisionOutcome =
  | { kind: "decided"; pending: PendingAuthorization }
  | { kind: "expired" }
  | { kind: "conflict"; earlier: Decision };

/**
 * Consent requests, stored so that a decision survives a restart and so that a repeated
 * identical decision (a double-submitted form, a reload) gives the same answer while a
 * contrary one is refused. The authorization code for a request is derived from its id
 * with a key only this instance holds, so an approval can be answered twice with the
 * same code without the code itself ever being stored.
 */
export class PendingAuthorizations {
  private readonly records: JsonRecords<PendingAuthorization>;
  private readonly locks = new KeyedLock();
  private readonly codeKey: Buffer;

  constructor(
    layout: StorageLayout,
    secret: string,
    private readonly now: () => number = Date.now,
  ) {
    this.records = new JsonRecords(layout, "oauth/requests");
    this.codeKey = Buffer.from(hkdfSync("sha256", secret, "", "atrium oauth authorization code", 32));
  }

  async create(
    request: Omit<PendingAuthorization, "id" | "expiresAt" | "decision">,
  ): Promise<PendingAuthorization> {
    const pending = {
      ...request,
      id: randomSecret(24),
      expiresAt: this.now() + PENDING_TTL_MS,
    };
    await this.records.put(pending.id, pending);
    return pending;
  }

  async get(id: string): Promise<PendingAuthorization | undefined> {
    if (!/^[A-Za-z0-9_-]{32}$/.test(id)) return undefined;
    const pending = await this.records.get(id);
    return pending && pending.expiresAt > this.now() ? pending : undefined;
  }

  async decide(id: string, decision: Decision): Promise<DecisionOutcome> {
    return this.locks.run(id, async () => {
      const pending = await this.get(id);
      if (!pending) return { kind: "expired" };
      if (pending.decision && pending.decision !== decision)
        return { kind: "conflict", earlier: pending.decision };
      if (!pending.decision) {
        pending.decision = decision;
        await this.records.put(id, pending);
      }
      return { kind: "decided", pending };
    });
  }

  codeFor(pending: PendingAuthorization): string {
    return createHmac("sha256", this.codeKey).update(pending.id).digest("base64url");
  }

  /** Removes requests nobody decided in time; at boot and hourly. */
  async sweep(): Promise<void> {
    for (const id of await this.records.ids()) {
      const pending = await this.records.get(id).catch(() => undefined);
      if (!pending || pending.expiresAt <= this.now()) await this.records.delete(id);
    }
  }
}
