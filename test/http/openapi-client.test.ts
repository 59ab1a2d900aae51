/**
 * The generated OpenAPI document types cleanly: a client generated from it with
 * openapi-typescript compiles under `strict`. A recursive type the generator cannot express
 * (TS2502, as the JSON value type was) fails here.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');

/** Type-checks `files` (name to source) under strict settings; the diagnostics as text. */
function compile(files: Record<string, string>): string[] {
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const read = host.readFile.bind(host);
  const exists = host.fileExists.bind(host);
  host.readFile = (name) => files[name] ?? read(name);
  host.fileExists = (name) => name in files || exists(name);
  host.getSourceFile = (name, version) => {
    const text = files[name] ?? read(name);
    return text === undefined ? undefined : ts.createSourceFile(name, text, version);
  };
  const program = ts.createProgram(Object.keys(files), options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start) : undefined;
    return `${d.file?.fileName ?? ''}:${where ? where.line + 1 : 0}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
  });
}

describe('a client generated from openapi.yaml with openapi-typescript', () => {
  it('compiles under strict settings (the recursive JSON value type did not: TS2502)', async () => {
    const schema = astToString(await openapiTS(readFileSync(join(ROOT, 'openapi.yaml'), 'utf8')));
    expect(schema).toContain('export interface paths');
    expect(compile({ '/client/schema.ts': schema })).toEqual([]);
  }, 60_000);
});
