import { JSONRPCErrorResponseSchema, JSONRPCResultResponseSchema } from "@modelcontextprotocol/core";

type SafeParse = (value: unknown, params?: never) => { success: boolean; error?: unknown };

/**
 * The SDK asks of every message it receives whether it is a result response, then an error
 * response, each by a full zod parse, before asking whether it is a request: the classifier of
 * the 2026 era once, the protocol's receiver once more. For a request both parses fail, and zod
 * builds and localises an error object for each that the SDK only asks `.success` of — ≈ 11% of
 * a 2026 `tools/call`'s CPU (adr/0081). A value without the member each schema requires can only
 * fail, so it is answered failed at once, its error still built in full if anyone reads it; every
 * other value goes through the schema's own parse. Idempotent; called before a server starts.
 */
export function shortCircuitResponseChecks(): void {
  requireMember(JSONRPCResultResponseSchema as unknown as { safeParse: SafeParse }, "result");
  requireMember(JSONRPCErrorResponseSchema as unknown as { safeParse: SafeParse }, "error");
}

/** The wrappers installed, so a second call finds its own and leaves it. */
const wrappers = new WeakSet<SafeParse>();

function requireMember(schema: { safeParse: SafeParse }, member: string): void {
  if (wrappers.has(schema.safeParse)) return;
  const parse = schema.safeParse.bind(schema);
  const wrapper: SafeParse = (value, params) => {
    if (hasMember(value, member)) return parse(value, params);
    return new Failed(parse, value, params);
  };
  wrappers.add(wrapper);
  schema.safeParse = wrapper;
}

/** A parse known to fail, as zod answers it; the error is built only if it is read. */
class Failed {
  readonly success = false;

  constructor(
    private readonly parse: SafeParse,
    private readonly value: unknown,
    private readonly params: never | undefined,
  ) {}

  get error(): unknown {
    return this.parse(this.value, this.params).error;
  }
}

function hasMember(value: unknown, member: string): boolean {
  return (
    typeof value === "object" && value !== null && (value as Record<string, unknown>)[member] !== undefined
  );
}
