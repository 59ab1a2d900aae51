/** The SDK transport's answer as a Fastify reply; its refusals become the registry's problem details. */
import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import { RegistryError, type ErrorCode } from '../../model/errors.js';

/** The SDK's HTTP refusals, by status, in the registry's error catalogue. */
const SDK_STATUS_CODES: Readonly<Record<number, ErrorCode>> = {
  400: 'TR_ERR_BAD_REQUEST',
  404: 'TR_ERR_NOT_FOUND',
  405: 'TR_ERR_METHOD_NOT_ALLOWED',
  406: 'TR_ERR_NOT_ACCEPTABLE',
  409: 'TR_ERR_CONFLICT',
  413: 'TR_ERR_BODY_TOO_LARGE',
  415: 'TR_ERR_UNSUPPORTED_MEDIA_TYPE',
};

/** What is read of an SDK refusal's body: its JSON-RPC error's code and message, where present. */
const SdkRefusalSchema = z.looseObject({
  error: z.looseObject({ code: z.number().optional().catch(undefined), message: z.string().optional().catch(undefined) }).optional(),
});

/** The SDK's answer as the reply; its refusals become problem details that keep the JSON-RPC error. */
export async function answer(reply: FastifyReply, response: Response): Promise<FastifyReply> {
  if (response.status < 400) return reply.send(response);
  let error: { code?: number; message?: string } | undefined;
  try {
    error = SdkRefusalSchema.safeParse(await response.json()).data?.error;
  } catch {
    error = undefined;
  }
  const allow = response.headers.get('allow');
  if (allow !== null) reply.header('allow', allow);
  const code = SDK_STATUS_CODES[response.status] ?? 'TR_ERR_INTERNAL';
  const message = error?.message ?? response.statusText;
  throw new RegistryError(code, message, {
    extra: { jsonrpc: '2.0', error: { code: error?.code ?? -32000, message }, id: null },
  });
}
