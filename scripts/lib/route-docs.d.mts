export interface DocumentedRoute {
  file: string;
  line: number;
  raw: string;
  path: string;
  methods: Set<string>;
}
export interface RegisteredRoute {
  method: string;
  path: string;
}
export function normalisePath(raw: string): string;
export function documentedRoutes(root: string): DocumentedRoute[];
export function covers(entry: DocumentedRoute, route: RegisteredRoute): boolean;
export function registers(
  routes: readonly RegisteredRoute[],
  entry: DocumentedRoute,
  method: string,
): boolean;
