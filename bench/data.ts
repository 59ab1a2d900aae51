/**
 * Generated catalogue content and tokens: N HTTP tools spread over 50 scopes (a tenth need no
 * scope), 50 agent tokens with three scopes each (50 different views), and an admin token.
 */
import { createSigner } from 'fast-jwt';

export const JWT_SECRET = 'bench-secret-that-is-long-enough-for-hs256-0123456789';
export const SCOPE_COUNT = 50;
export const TOKEN_COUNT = 50;
export const ADMIN_SCOPE = 'registry:write';

export const scopeName = (k: number) => `bench:scope-${String(k % SCOPE_COUNT).padStart(2, '0')}`;

export function httpTool(i: number, prefix = 'tool'): Record<string, unknown> {
  const scopes = i % 10 === 0 ? [] : i % 3 === 0 ? [scopeName(i), scopeName(i * 7 + 3)] : [scopeName(i)];
  const name = `${prefix}-${String(i).padStart(6, '0')}`;
  return {
    name,
    endpoint: `/tools/${name}`,
    scopes: [...new Set(scopes)],
    description: `Benchmark tool ${i}: looks up records of kind ${i % 97} and summarises them`,
    parameters: {
      query: { type: 'string', description: 'What to look up' },
      limit: { type: 'integer', description: 'Most records to return', required: false },
    },
    returns: 'A JSON list of records',
    host: 'localhost',
    port: 8002,
  };
}

export function bundle(n: number): string {
  const tools: Record<string, unknown>[] = [];
  for (let i = 0; i < n; i++) tools.push(httpTool(i));
  return JSON.stringify({ 'tool-services': [], tools });
}

const sign = createSigner({ key: JWT_SECRET, expiresIn: 6 * 3_600_000, header: { alg: 'HS256', typ: 'at+jwt' } });

export function token(sub: string, scopes: string[]): string {
  return sign({ sub, scope: scopes.join(' ') });
}

/** Token j holds scopes j, j+17 and j+31 (mod 50): 50 different scope sets. */
export function agentTokens(): string[] {
  return Array.from({ length: TOKEN_COUNT }, (_, j) => token(`bench-agent-${j}`, [scopeName(j), scopeName(j + 17), scopeName(j + 31)]));
}

export const adminToken = () => token('bench-admin', [ADMIN_SCOPE]);
