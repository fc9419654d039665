// The tenant (and integration) named in the path. A name that could never be a tenant ID (ID_PATTERN, the
// control plane's rule, the pipeline's name step) is answered 404 before the Governor sees it, so it costs no state.
import { isAcceptableName } from '../pipeline/index.ts';

/** The path segments after `prefix`, decoded; null when the path does not have exactly `count` valid segments. */
export function namesInPath(pathname: string, prefix: string, count: number): string[] | null {
  const rest = pathname.slice(prefix.length);
  const segments = count === 1 ? (rest.includes('/') ? [] : [rest]) : rest.split('/');
  if (segments.length !== count) return null;
  const names: string[] = [];
  for (const segment of segments) {
    let name = segment;
    if (segment.includes('%')) {
      try {
        name = decodeURIComponent(segment);
      } catch {
        return null;
      }
    }
    if (!isAcceptableName(name)) return null;
    names.push(name);
  }
  return names;
}
