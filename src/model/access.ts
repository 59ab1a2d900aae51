import type { Tool } from './normalise.js';
import type { Caller } from './caller.js';

export interface AccessExplanation {
  tool: string;
  /** Any one of these grants the tool; none means every caller with a token. */
  requiredScopes: string[];
  grantedScopes: string[];
  /** Required scopes the caller lacks (all of them when none is held). */
  missingScopes: string[];
  /** Whether the tool is in the caller's discovery view. */
  discoverable: boolean;
  decision: 'allow' | 'deny';
  reason: string;
}

/** Whether a call to the tool would be allowed, and why, in terms an agent can act on. */
export function explainAccess(tool: Tool, caller: Caller, discoverable: boolean): AccessExplanation {
  const required = [...tool.scopes].sort();
  const granted = caller.kind === 'token' ? [...caller.scopes].sort() : [];
  const matching = required.filter((s) => granted.includes(s));
  const base = { tool: tool.name, requiredScopes: required, grantedScopes: granted, discoverable };
  if (caller.kind === 'anonymous') {
    return {
      ...base,
      missingScopes: required,
      decision: 'deny',
      reason:
        required.length === 0
          ? 'calling a tool needs a bearer token; this tool needs no particular scope'
          : `calling this tool needs a bearer token with one of: ${required.join(', ')}`,
    };
  }
  if (required.length === 0)
    return { ...base, missingScopes: [], decision: 'allow', reason: 'the tool needs no scope; any valid token may call it' };
  if (matching.length > 0) return { ...base, missingScopes: [], decision: 'allow', reason: `granted by scope ${matching.join(', ')}` };
  return {
    ...base,
    missingScopes: required,
    decision: 'deny',
    reason: `the token has none of the scopes that grant this tool: ${required.join(', ')}`,
  };
}
