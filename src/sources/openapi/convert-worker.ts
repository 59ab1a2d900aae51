/**
 * The worker thread of src/sources/openapi/convert.ts: one conversion at a time. Each kept
 * operation's tool body is checked here as a registration checks it (the schemas it declares
 * included); one that does not pass is skipped with the reason, not the whole document.
 */
import { parentPort } from 'node:worker_threads';
import { RegistryError } from '../../model/errors.js';
import { parseToolBody } from '../../json-schema/tool-schemas.js';
import { importOpenApi, type ImportedDocument, type OpenApiImportOptions } from './import.js';

async function convert(options: OpenApiImportOptions): Promise<ImportedDocument> {
  const converted = await importOpenApi(options);
  const operations: ImportedDocument['operations'] = [];
  for (const operation of converted.operations) {
    try {
      operations.push({ ...operation, body: parseToolBody(operation.body) as unknown as Record<string, unknown> });
    } catch (error) {
      if (!(error instanceof RegistryError)) throw error;
      const first = error.fieldErrors?.[0];
      converted.skipped.push({ pointer: operation.pointer, reason: first ? `${first.path}: ${first.message}` : error.message });
    }
  }
  return { ...converted, operations };
}

const port = parentPort;
port?.on('message', ({ id, options }: { id: number; options: OpenApiImportOptions }) => {
  convert(options).then(
    (converted) => port.postMessage({ id, ok: true, converted }),
    (error: unknown) =>
      port.postMessage(
        error instanceof RegistryError
          ? { id, ok: false, code: error.code, message: error.message, fieldErrors: error.fieldErrors }
          : {
              id,
              ok: false,
              code: 'TR_ERR_VALIDATION',
              message: `OpenAPI document: cannot be read: ${String((error as Error | undefined)?.message ?? error).slice(0, 300)}`,
            },
      ),
  );
});
