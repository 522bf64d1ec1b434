/**
 * The paths the stream host owns, the one definition of the split between the two processes: CloudFront
 * routes these path patterns to the stream host's load balancer (infra/cdk/edge.ts) and the all-in-one
 * `npm start` process sends them to the stream host's app (scripts/all-in-one.ts). Everything else belongs
 * to the handlers; both processes answer `/api/health` and `/api/ready` themselves.
 *
 * Patterns are CloudFront path patterns; here a `*` stands for exactly one path segment (a dashboard id).
 */
export const STREAM_HOST_PATHS = ["/api/dashboards/*/stream", "/api/metrics"] as const;

const OWNED = STREAM_HOST_PATHS.map((pattern) => new RegExp(`^${pattern.split("*").map(escapeRegExp).join("[^/]+")}$`));

/** Whether the stream host owns `path` (a URL's pathname, without the query). */
export function isStreamHostPath(path: string): boolean {
  return OWNED.some((re) => re.test(path));
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
