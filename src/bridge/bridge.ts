/**
 * Invoking a tool through the registry: check the caller's scopes again at call time
 * (independent of what discovery showed), carry the call to the tool's service, record usage,
 * and return the observation or an error with a stable type.
 */
import { randomUUID } from 'node:crypto';
import { requireScope, type Caller } from '../model/caller.js';
import { normaliseTool, type Tool } from '../model/normalise.js';
import { mayLearnOf, type VisibilityPolicy } from '../model/visibility.js';
import { pastSunset } from '../model/deprecation.js';
import type { Catalog, CatalogTool } from '../catalog/catalog.js';
import type { ToolKind } from '../model/schemas.js';
import { RegistryError, type FieldError } from '../model/errors.js';
import { ArgumentValidators, OutputValidators, UncompilableSchemaError } from '../json-schema/arguments.js';
import { ValidationBusyError } from '../json-schema/validation-pool.js';
import { ValidationWorkError } from '../json-schema/work.js';
import { withoutStrictNulls } from '../json-schema/strict-nulls.js';
import type { CallOutcome } from '../model/records.js';
import type { UsageTracker } from '../usage/tracker.js';
import {
  BridgeUnavailableError,
  CallerGoneError,
  CallTimeoutError,
  RequestTooLargeError,
  TargetRefusedError,
  ToolServiceError,
  UpstreamUnavailableError,
} from './errors.js';
import type { CallProgress, ToolTransport, TransportState } from './transport.js';
import type { BinaryContent } from '../model/api.js';
import type { McpContentBlock } from '../model/mcp-content.js';
import { annotateInvoke, traceInvoke } from './tracing.js';

export interface BridgeOptions {
  catalog: Catalog;
  /** How each kind of tool is reached. */
  transports: Readonly<Record<ToolKind, ToolTransport>>;
  usage: UsageTracker;
  defaultTimeoutMs: number;
  maxInflight: number;
  /** Calls one caller may have in flight at once: its share of `maxInflight`. */
  maxInflightPerCaller: number;
  /** Who may learn which tools exist; its admin scope's tokens are not forwarded to tools. */
  visibility: VisibilityPolicy;
  /** Checks arguments against tools' input schemas (default: a new set, compiled on first call). */
  argumentValidators?: ArgumentValidators;
  /** Whether an announced tool service is alive (src/catalog/service-health.ts); absent: all are. */
  health?: { availability(serviceId: string): { available: boolean; intervalS?: number; saidGoodbye?: true } };
}

export interface InvokeRequest {
  toolName: string;
  arguments: unknown;
  caller: Caller;
  /** The caller's Authorization header, forwarded to HTTP tools that want it. */
  authorization: string | undefined;
  /** Whose share of the in-flight calls this call uses (token issuer and subject, or address). */
  callerKey: string;
  onChunk?: (text: string) => void;
  /** Called with an upstream MCP server's progress notifications during the call (unthrottled: the front bounds them). */
  onProgress?: (progress: CallProgress) => void;
  /** Aborted when the caller goes away: the call is cancelled and its slot freed. */
  signal?: AbortSignal;
}

export interface InvokeResult {
  tool: string;
  /** The correlation id (the `id` message property on the bus). */
  id: string;
  /** The observation, as text. */
  result: string;
  /** An answer of bytes (an HTTP tool's image or other binary content), base64 with its media type; `result` then names it. */
  content?: BinaryContent | McpContentBlock[];
  durationMs: number;
}

export type BridgeState = TransportState;

/** Schema problems in one line: `path: message; ...`, the value's top named `top`. */
function listed(errors: readonly FieldError[], top: string): string {
  return errors.map((e) => `${e.path || top}: ${e.message}`).join('; ');
}

export class ToolBridge {
  readonly #options: BridgeOptions;
  readonly #validators: ArgumentValidators;
  readonly #outputValidators = new OutputValidators();
  #inflight = 0;
  /** In-flight calls per caller (callerKey); a caller's entry goes when its last call ends. */
  readonly #inflightBy = new Map<string, number>();

  constructor(options: BridgeOptions) {
    this.#options = options;
    this.#validators = options.argumentValidators ?? new ArgumentValidators();
  }

  get inflight(): number {
    return this.#inflight;
  }

  /** The message bus's state (HTTP tools need no standing connection). */
  get state(): BridgeState {
    return this.#options.transports['tool-service'].state;
  }

  close(): void {
    for (const transport of Object.values(this.#options.transports)) transport.close();
  }

  /**
   * The checks every call passes first, in this order: the caller may know of the tool, may call
   * it (a token, holding one of its scopes), and the tool is live. Throws the refusal `invoke`
   * would give (a refusal at the scope check counts as a denied call), so that a front can
   * answer it in its own terms before the call starts (MCP's 403 insufficient_scope).
   */
  admit(toolName: string, caller: Caller): CatalogTool {
    const { catalog, visibility } = this.#options;
    const found = catalog.getTool(toolName);
    // What a caller may not list, it cannot learn exists: a tool outside what it may know of is
    // answered exactly as a name never registered (no scopes, no 403, no 410).
    const entry = found && mayLearnOf(found.tool.scopes, caller, visibility) ? found : undefined;
    if (!entry) throw this.#unknownTool(toolName, caller);
    const { tool, record } = entry;
    try {
      // Anonymous callers never call tools, even ones that need no scope; a token needs one of
      // the tool's scopes, if it has any.
      if (caller.kind === 'anonymous' && tool.scopes.length === 0) {
        throw new RegistryError('TR_ERR_UNAUTHENTICATED', `calling ${tool.name} needs a bearer token`, { challenge: {} });
      }
      requireScope(caller, tool.scopes, `calling ${tool.name}`);
    } catch (err) {
      this.#options.usage.record({ at: new Date().toISOString(), tool: tool.name, sub: subOf(caller), outcome: 'denied', durationMs: 0 });
      throw err;
    }
    // A deprecated tool works until its sunset (issue 34); the catalogue drops it at the sunset,
    // and this check covers the moment before its timer fires.
    if (record.status === 'deleted') throw new RegistryError('TR_ERR_GONE', `tool "${tool.name}" was deleted and can no longer be called`);
    if (record.deprecation !== undefined && pastSunset(record.deprecation, Date.now())) {
      throw new RegistryError('TR_ERR_GONE', `tool "${tool.name}" passed its sunset and can no longer be called`);
    }
    // A tool service that stopped its heartbeats: refused at once, not after the call's timeout.
    const health =
      record.kind === 'tool-service' && record.serviceId !== null ? this.#options.health?.availability(record.serviceId) : undefined;
    if (health && !health.available) {
      // Counted like any call the bus could not carry, so that /stats shows a dead service's refusals.
      this.#options.usage.record({
        at: new Date().toISOString(),
        tool: tool.name,
        sub: subOf(caller),
        outcome: 'unavailable',
        durationMs: 0,
      });
      const why = health.saidGoodbye ? 'said goodbye' : 'stopped sending heartbeats';
      throw new RegistryError('TR_ERR_BUS_UNAVAILABLE', `${tool.name} cannot be reached now: its tool service ${why}`, {
        retryAfterS: Math.max(1, Math.ceil(health.intervalS ?? 5)),
      });
    }
    return entry;
  }

  /** One call, in a span of its own whose child is the transport's (src/bridge/tracing.ts). */
  invoke(request: InvokeRequest): Promise<InvokeResult> {
    return traceInvoke(request.toolName, () => this.#invoke(request));
  }

  async #invoke(request: InvokeRequest): Promise<InvokeResult> {
    const { usage } = this.#options;
    const { tool, record } = this.admit(request.toolName, request.caller);
    const sub = subOf(request.caller);
    const started = performance.now();
    const deprecated = record.deprecation !== undefined;
    const finish = (outcome: CallOutcome) => {
      const durationMs = performance.now() - started;
      usage.record({ at: new Date().toISOString(), tool: tool.name, sub, outcome, durationMs, ...(deprecated && { deprecated }) });
      return durationMs;
    };
    // No body means no arguments; a JSON null is a value, and not an object.
    const given = request.arguments === undefined ? {} : request.arguments;
    if (typeof given !== 'object' || given === null || Array.isArray(given)) {
      throw new RegistryError('TR_ERR_INVALID_ARGUMENTS', 'the arguments must be a JSON object', {
        fieldErrors: [{ path: '', message: 'must be a JSON object of argument name to value' }],
      });
    }
    // A strict-mode client's null for an optional argument means "absent" (src/json-schema/strict-nulls.ts).
    const args = withoutStrictNulls(tool.inputSchema, given as Record<string, unknown>);
    await this.#checkArguments(tool, args, request.callerKey, finish);
    if (this.#inflight >= this.#options.maxInflight) {
      finish('unavailable');
      throw new RegistryError(
        'TR_ERR_TOO_MANY_CALLS',
        `${this.#inflight} calls are in flight, the most this registry carries at once; retry shortly`,
        {
          retryAfterS: 1,
        },
      );
    }
    const { callerKey } = request;
    const mine = this.#inflightBy.get(callerKey) ?? 0;
    if (mine >= this.#options.maxInflightPerCaller) {
      finish('unavailable');
      throw new RegistryError(
        'TR_ERR_TOO_MANY_CALLS',
        `you have ${mine} calls in flight, the most one caller may have at once; retry when one ends`,
        {
          retryAfterS: 1,
        },
      );
    }

    const id = randomUUID();
    annotateInvoke(tool.name, tool.kind, id);
    const timeoutMs = this.#timeoutOf(tool);
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new CallTimeoutError(`no answer within ${timeoutMs} ms`)), timeoutMs);
    const onCallerGone = () => controller.abort(new CallerGoneError('the caller went away'));
    request.signal?.addEventListener('abort', onCallerGone, { once: true });
    // A caller gone before this point (while its arguments were checked) sends no 'abort' event.
    if (request.signal?.aborted) onCallerGone();
    this.#inflight++;
    this.#inflightBy.set(callerKey, mine + 1);
    try {
      const result = await this.#options.transports[tool.kind].call({
        id,
        tool,
        descriptor: record.descriptor,
        arguments: args,
        sub,
        authorization: tool.http?.forwardAuthorization && !this.#carriesAdminScope(request.caller) ? request.authorization : undefined,
        owner: record.owner ?? null,
        callerToken: bearerOf(request.authorization),
        onChunk: request.onChunk,
        onProgress: request.onProgress,
        signal: controller.signal,
      });
      const answer = typeof result === 'string' ? { text: result } : result;
      return {
        tool: tool.name,
        id,
        result: answer.text,
        ...(answer.binary !== undefined && { content: answer.binary }),
        ...(answer.blocks !== undefined && { content: answer.blocks }),
        durationMs: round(finish('ok')),
      };
    } catch (err) {
      throw this.#classify(err, tool.name, finish);
    } finally {
      clearTimeout(timer);
      request.signal?.removeEventListener('abort', onCallerGone);
      this.#inflight--;
      const left = (this.#inflightBy.get(callerKey) ?? 1) - 1;
      if (left > 0) this.#inflightBy.set(callerKey, left);
      else this.#inflightBy.delete(callerKey);
    }
  }

  /**
   * The arguments against the input schema discovery serves, before anything reaches the tool.
   * A refusal is not a call (like arguments that are not an object, it is not counted in usage);
   * a stored schema that cannot be compiled is the tool's fault, a failed call (502).
   */
  async #checkArguments(
    tool: Tool,
    args: Record<string, unknown>,
    callerKey: string,
    finish: (outcome: CallOutcome) => number,
  ): Promise<void> {
    let errors: FieldError[];
    try {
      errors = await this.#validators.check(tool, args, { owner: callerKey, timeoutMs: this.#timeoutOf(tool) });
    } catch (err) {
      // Too costly to check: the caller's value, refused like arguments that do not fit.
      if (err instanceof ValidationWorkError)
        throw new RegistryError('TR_ERR_INVALID_ARGUMENTS', `the arguments of ${tool.name} cannot be checked: ${err.message}`);
      if (err instanceof ValidationBusyError)
        throw new RegistryError('TR_ERR_TOO_MANY_CALLS', `the arguments of ${tool.name} cannot be checked now: ${err.message}`, {
          retryAfterS: 1,
        });
      if (!(err instanceof UncompilableSchemaError)) throw err;
      finish('service-error');
      const message = `the tool's stored input schema cannot be checked against (${err.message}); an operator must register the tool again with a valid schema`;
      throw new RegistryError('TR_ERR_TOOL_SERVICE', `${tool.name} failed: ${message}`, {
        extra: { serviceError: { type: 'invalid-input-schema', message } },
      });
    }
    if (errors.length === 0) return;
    throw new RegistryError(
      'TR_ERR_INVALID_ARGUMENTS',
      `the arguments do not fit the input schema of ${tool.name}: ${listed(errors, '(arguments)')}`,
      { fieldErrors: errors },
    );
  }

  /**
   * Why a call's JSON answer does not fit the tool's output schema (one line), or undefined when
   * it does or the tool declares none: MCP's `structuredContent` must conform to it. A stored
   * schema that cannot be compiled is reported the same way: nothing can be shown to conform.
   */
  async outputProblem(tool: Tool, value: Record<string, unknown>): Promise<string | undefined> {
    let errors: FieldError[];
    try {
      errors = await this.#outputValidators.check(tool, value, { owner: `tool:${tool.name}`, timeoutMs: this.#timeoutOf(tool) });
    } catch (err) {
      if (err instanceof ValidationWorkError || err instanceof ValidationBusyError)
        return `the answer of ${tool.name} cannot be shown to fit its output schema: ${err.message}`;
      if (!(err instanceof UncompilableSchemaError)) throw err;
      return `the tool's stored output schema cannot be checked against (${err.message})`;
    }
    if (errors.length === 0) return undefined;
    return `the answer does not fit the output schema of ${tool.name}: ${listed(errors, '(answer)')}`;
  }

  /** How long a call of the tool may take (and so may the check of its arguments or answer). */
  #timeoutOf(tool: Tool): number {
    return tool.timeoutMs ?? this.#options.defaultTimeoutMs;
  }

  /**
   * The answer for a name the caller may not know of: anonymous callers get the bare 401 every
   * name gets; a token 404, or 410 when the deleted tool was one it could have known of.
   */
  #unknownTool(name: string, caller: Caller): RegistryError {
    if (caller.kind === 'anonymous')
      return new RegistryError('TR_ERR_UNAUTHENTICATED', `calling ${name} needs a bearer token`, { challenge: {} });
    const tombstone = this.#options.catalog.getTombstone(name);
    if (tombstone && mayLearnOf(normaliseTool(tombstone.kind, tombstone.descriptor).scopes, caller, this.#options.visibility)) {
      return new RegistryError('TR_ERR_GONE', `tool "${name}" was deleted and can no longer be called`);
    }
    return new RegistryError('TR_ERR_NOT_FOUND', `no tool "${name}"`);
  }

  /**
   * A token that can write to the registry is never handed to a tool's host: whoever runs the
   * tool (or sits on the path to it) could replay it against the registry.
   */
  #carriesAdminScope(caller: Caller): boolean {
    return caller.kind === 'token' && caller.scopes.has(this.#options.visibility.adminScope);
  }

  #classify(err: unknown, toolName: string, finish: (outcome: CallOutcome) => number): Error {
    if (err instanceof CallerGoneError) {
      finish('cancelled');
      return new RegistryError('TR_ERR_CLIENT_CLOSED', `${toolName}: ${err.message}`);
    }
    if (err instanceof CallTimeoutError) {
      finish('timeout');
      return new RegistryError('TR_ERR_TIMEOUT', `${toolName}: ${err.message}`);
    }
    // The tool's target is not one the registry connects to: the operator's descriptor (or its
    // DNS) is at fault, not the caller, so a failed call (502) like a tool's error.
    if (err instanceof TargetRefusedError) {
      finish('service-error');
      return new RegistryError('TR_ERR_TARGET_REFUSED', `${toolName} cannot be called: ${err.message}`);
    }
    if (err instanceof ToolServiceError) {
      finish('service-error');
      return new RegistryError('TR_ERR_TOOL_SERVICE', `${toolName} failed: ${err.message}`, {
        extra: { serviceError: { type: err.type, message: err.message } },
      });
    }
    if (err instanceof RequestTooLargeError) {
      finish('unavailable');
      return new RegistryError('TR_ERR_REQUEST_TOO_LARGE', err.message);
    }
    if (err instanceof UpstreamUnavailableError) {
      finish('unavailable');
      return new RegistryError('TR_ERR_UPSTREAM_UNAVAILABLE', `${toolName} cannot be reached now: ${err.message}`, { retryAfterS: 5 });
    }
    if (err instanceof BridgeUnavailableError) {
      finish('unavailable');
      return new RegistryError('TR_ERR_BUS_UNAVAILABLE', `${toolName} cannot be reached now: ${err.message}`, { retryAfterS: 5 });
    }
    // An argument the transport cannot place (a line break for a header of an HTTP target):
    // refused like arguments that do not fit the schema, and, like them, not counted as a call.
    if (err instanceof RegistryError && err.code === 'TR_ERR_INVALID_ARGUMENTS') return err;
    finish('unavailable');
    return err instanceof Error ? err : new Error(String(err));
  }
}

const round = (ms: number) => Math.round(ms * 100) / 100;

const subOf = (caller: Caller) => (caller.kind === 'token' ? (caller.sub ?? null) : null);

/** The token of a `Bearer` Authorization header. */
function bearerOf(authorization: string | undefined): string | undefined {
  const match = authorization === undefined ? null : /^Bearer +([\x21-\x7E]+) *$/i.exec(authorization);
  return match?.[1];
}
