import type { Tool } from './normalise.js';
import type { Caller } from './caller.js';
import { describeEntries, grants, missingTokens, tokensOf } from './scope-rule.js';

export interface AccessExplanation {
  tool: string;
  /**
   * The tool's scope entries: any one grants the tool, each needing all its space-separated
   * tokens (src/model/scope-rule.ts); none means every caller with a token.
   */
  requiredScopes: string[];
  grantedScopes: string[];
  /** The tokens the caller lacks for the nearest entry (every token of it when anonymous); empty when allowed. */
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
  const held = new Set(granted);
  const base = { tool: tool.name, requiredScopes: required, grantedScopes: granted, discoverable };
  // One-token entries read as a list, as before the rule; an entry of several reads "a and b".
  const compound = required.some((entry) => entry.includes(' '));
  const listed = compound ? describeEntries(required) : required.join(', ');
  if (caller.kind === 'anonymous') {
    return {
      ...base,
      missingScopes: compound ? missingTokens(required, held) : required,
      decision: 'deny',
      reason:
        required.length === 0
          ? 'calling a tool needs a bearer token; this tool needs no particular scope'
          : `calling this tool needs a bearer token with ${compound ? '' : 'one of: '}${listed}`,
    };
  }
  if (required.length === 0)
    return { ...base, missingScopes: [], decision: 'allow', reason: 'the tool needs no scope; any valid token may call it' };
  if (grants(required, held)) {
    const matching = required.filter((entry) => grants([entry], held));
    return { ...base, missingScopes: [], decision: 'allow', reason: `granted by scope ${matching.join(', ')}` };
  }
  return {
    ...base,
    missingScopes: compound ? missingTokens(required, held) : tokensOf(required),
    decision: 'deny',
    reason: compound
      ? `the token lacks ${missingTokens(required, held).join(' and ')} of the nearest alternative; this tool needs ${listed}`
      : `the token has none of the scopes that grant this tool: ${listed}`,
  };
}
