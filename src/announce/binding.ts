/**
 * What an operator's binding lets an announcer announce (issue 29, ANNOUNCER_KEYS_FILE): its
 * service's queues must match the binding's patterns, may be shared with another of its own
 * services only with `shareQueues` (another owner's queues the write side refuses whatever the
 * binding says, src/registry/write-commands.ts), and every scope its tools require must be one
 * granted; a tool requiring none only with `unscopedTools`. Each check answers the reason of a
 * refusal, or undefined.
 */
import { queuePatternMatcher, type AnnouncerBinding } from '../model/announcer-bindings.js';
import type { ServiceRecord } from '../model/records.js';
import type { ToolService } from '../model/schemas.js';
import { tokensOf } from '../model/scope-rule.js';

/** The two queues of a service descriptor. */
function queuesOf(service: Pick<ToolService, 'request-queue' | 'response-queue'>): string[] {
  return [service['request-queue'], service['response-queue']];
}

const matchers = new WeakMap<AnnouncerBinding, ((queue: string) => boolean)[]>();

/** The binding's queue patterns, compiled once per binding. */
function patternsOf(binding: AnnouncerBinding): ((queue: string) => boolean)[] {
  let compiled = matchers.get(binding);
  if (compiled === undefined) {
    compiled = binding.queues.map(queuePatternMatcher);
    matchers.set(binding, compiled);
  }
  return compiled;
}

export function refusedQueues(binding: AnnouncerBinding, service: ToolService): string | undefined {
  const patterns = patternsOf(binding);
  const outside = queuesOf(service).filter((queue) => !patterns.some((matches) => matches(queue)));
  if (outside.length === 0) return undefined;
  return `service "${service.id}" names ${outside.join(' and ')}, which the binding of announcer ${binding.subject} does not grant`;
}

/**
 * Another service of the same announcer on one of these queues, without `shareQueues`. A queue
 * the stored version of this service already shared is kept: services that shared before
 * bindings existed keep working.
 */
export function refusedSharing(
  binding: AnnouncerBinding,
  owner: string,
  service: ToolService,
  services: readonly ServiceRecord[],
): string | undefined {
  if (binding.shareQueues) return undefined;
  const stored = services.find((record) => record.id === service.id && record.status === 'active' && record.owner === owner);
  const kept = new Set(stored ? queuesOf(stored.descriptor) : []);
  for (const other of services) {
    if (other.id === service.id || other.status !== 'active' || other.owner !== owner) continue;
    const shared = queuesOf(other.descriptor).filter((queue) => queuesOf(service).includes(queue) && !kept.has(queue));
    if (shared.length > 0)
      return `service "${service.id}" names ${shared.join(' and ')}, which its service "${other.id}" uses; the binding does not let its services share queues (shareQueues)`;
  }
  return undefined;
}

/**
 * The scopes of announced tools against the binding's grant: every token any entry names must be
 * granted (an entry `a b` needs the binding to grant both a and b), so an announcer cannot
 * widen a tool's audience past the scopes it was bound to.
 */
export function refusedScopes(
  binding: AnnouncerBinding,
  tools: readonly { name: string; scopes: readonly string[] }[],
): string | undefined {
  const granted = new Set(binding.scopes);
  for (const tool of tools) {
    if (tool.scopes.length === 0 && !binding.unscopedTools)
      return `tool "${tool.name}" requires no scope (every caller could call it), which the binding of announcer ${binding.subject} does not allow (unscopedTools)`;
    const ungranted = tokensOf(tool.scopes).filter((scope) => !granted.has(scope));
    if (ungranted.length > 0)
      return `tool "${tool.name}" requires ${ungranted.join(', ')}, which the binding of announcer ${binding.subject} does not grant`;
  }
  return undefined;
}
