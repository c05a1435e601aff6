// autocannon ships no types and @types/autocannon is not a dependency; this declares only the slice
// of its programmatic API the bench uses, so the rest of bench/ stays strictly typed.
declare module "autocannon" {
  namespace autocannon {
    interface Options {
      url: string;
      method?: "GET" | "POST";
      headers?: Record<string, string>;
      body?: string;
      connections?: number;
      duration?: number;
      timeout?: number;
      verifyBody?: (body: string) => boolean;
    }

    interface Histogram {
      average: number;
      mean: number;
      stddev: number;
      min: number;
      max: number;
      total: number;
      p50: number;
      p99: number;
    }

    interface Result {
      requests: Histogram;
      latency: Histogram;
      duration: number;
      errors: number;
      timeouts: number;
      mismatches: number;
      non2xx: number;
      statusCodeStats: Record<string, { count: number }>;
    }

    interface Instance extends PromiseLike<Result> {
      on(
        event: "response",
        listener: (client: unknown, statusCode: number, resBytes: number, responseTime: number) => void,
      ): Instance;
      stop(): void;
    }
  }

  function autocannon(options: autocannon.Options): autocannon.Instance;

  export = autocannon;
}
