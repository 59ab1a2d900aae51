import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { importOpenApi } from '../../src/sources/openapi/import.js';

const petstore = readFileSync(new URL('../fixtures/openapi/petstore-3.0.yaml', import.meta.url), 'utf8');

describe('importOpenApi', () => {
  it('converts the Petstore', async () => {
    const doc = await importOpenApi({ document: petstore, prefix: 'pet_', baseUrl: 'https://petstore.example.com/api/v3' });
    expect(doc.operations.length).toBeGreaterThan(5);
    const add = doc.operations.find((o) => o.operationId === 'addPet')!;
    expect(add.method).toBe('POST');
    expect(add.body.scopes).toEqual(['read:pets write:pets']);
  });
  it('refuses an external $ref with its pointer', async () => {
    const document = {
      openapi: '3.0.3',
      info: { title: 't', version: '1' },
      paths: { '/a': { get: { responses: { '200': { $ref: 'http://x/y' } } } } },
    };
    await expect(importOpenApi({ document, prefix: 'x', baseUrl: 'https://a.example' })).rejects.toMatchObject({
      code: 'TR_ERR_VALIDATION',
    });
  });
});
