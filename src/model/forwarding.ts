/**
 * `forwardAuthorization` on the replication topic (issue 30). Its default was `true` and is
 * `false` now. A tool put travels as its parsed body, the field written out either way; an
 * import travels as the bundle the operator sent, whose HTTP tools may leave it out. So that
 * every replica, whichever version applies a message, stores what its writer meant, writers
 * since issue 30 write the field out in every HTTP tool of an import (`false` where it was left
 * out), and an HTTP tool of an import without it was written before, under the old default:
 * replicas apply it as `true`.
 */
import { isObject } from './json-object.js';

/** Default before issue 30: what an import on the topic without the field meant. */
export const FORWARD_AUTHORIZATION_BEFORE_ISSUE_30 = true;

/** Anything else is not an HTTP tool, or not a tool at all, and is left for validation to name. */
const isHttpTool = (tool: unknown): tool is Record<string, unknown> =>
  isObject(tool) && (tool['type'] === undefined || tool['type'] === 'http');

/** The tool with `forwardAuthorization: value` when it is an HTTP tool that does not state it. */
export function toolWithForwardingStated(tool: unknown, value: boolean): unknown {
  return isHttpTool(tool) && !Object.hasOwn(tool, 'forwardAuthorization') ? { ...tool, forwardAuthorization: value } : tool;
}

/**
 * The bundle with `forwardAuthorization: value` in each HTTP tool that does not state it; the
 * bundle as it is when it has no tools list (the import's own validation then refuses it).
 */
export function withForwardingStated(bundle: unknown, value: boolean): unknown {
  if (!isObject(bundle) || !Array.isArray(bundle['tools'])) return bundle;
  const tools = bundle['tools'] as unknown[];
  if (!tools.some((tool) => isHttpTool(tool) && !Object.hasOwn(tool, 'forwardAuthorization'))) return bundle;
  return {
    ...bundle,
    tools: tools.map((tool) => toolWithForwardingStated(tool, value)),
  };
}
