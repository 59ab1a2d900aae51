/**
 * The one error the client throws for a refused or failed call: the problem's facts (RFC 9457
 * with the registry's stable `code`), so callers branch on `code`, never on a message.
 */
import type { Problem } from '../model/api.js';

export class RegistryClientError extends Error {
  override readonly name = 'RegistryClientError';
  /** The HTTP status; for a streamed call that failed after it started, the problem's status. */
  readonly status: number;
  /** The problem's `code` (`TR_ERR_*`); `TR_CLIENT_*` for failures the client itself found. */
  readonly code: string;
  readonly detail: string | undefined;
  /** Seconds from `Retry-After`, where the answer carried one. */
  readonly retryAfterS: number | undefined;
  /** The whole problem body (`errors`, `serviceError`, …), where there was one. */
  readonly problem: Problem | undefined;

  constructor(
    status: number,
    code: string,
    detail?: string,
    options: { retryAfterS?: number | undefined; problem?: Problem | undefined; cause?: unknown } = {},
  ) {
    super(
      detail !== undefined ? `${code}: ${detail}` : `${code} (HTTP ${status})`,
      options.cause !== undefined ? { cause: options.cause } : undefined,
    );
    this.status = status;
    this.code = code;
    this.detail = detail;
    this.retryAfterS = options.retryAfterS;
    this.problem = options.problem;
  }

  /** The per-field failures of a `400` (`TR_ERR_INVALID_ARGUMENTS`, `TR_ERR_VALIDATION`). */
  get errors(): { path: string; message: string }[] {
    const errors = this.problem?.['errors'];
    return Array.isArray(errors) ? (errors as { path: string; message: string }[]) : [];
  }
}

/** Reads `Retry-After` as seconds (the registry sends delta-seconds only). */
export function retryAfterOf(headers: Headers): number | undefined {
  const value = headers.get('retry-after');
  if (value === null) return undefined;
  const seconds = Number(value);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds : undefined;
}

/** The error for a non-2xx answer: its problem body when it has one, else its status. */
export async function errorOf(response: Response): Promise<RegistryClientError> {
  const retryAfterS = retryAfterOf(response.headers);
  const text = await response.text().catch(() => '');
  let problem: Problem | undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === 'object' && parsed !== null && typeof (parsed as { code?: unknown }).code === 'string')
      problem = parsed as Problem;
  } catch {
    // Not a problem body (a proxy's HTML page, say): the status is all there is.
  }
  return problemError(response.status, problem, retryAfterS, text);
}

export function problemError(
  status: number,
  problem: Problem | undefined,
  retryAfterS?: number,
  fallbackDetail?: string,
): RegistryClientError {
  const code = problem?.code ?? `TR_CLIENT_HTTP_${status}`;
  const detail = problem?.detail ?? problem?.title ?? (fallbackDetail ? fallbackDetail.slice(0, 500) : undefined);
  return new RegistryClientError(problem?.status ?? status, code, detail, { retryAfterS, problem });
}
