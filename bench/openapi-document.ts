/** An OpenAPI 3.0 document of `n` operations (one path each, a path and a query parameter, a JSON body on every other), for the import bench row (issue 30). */
export function openApiDocument(n: number): Record<string, unknown> {
  const paths: Record<string, unknown> = {};
  for (let i = 0; i < n; i++) {
    const op: Record<string, unknown> = {
      operationId: `op${i}`,
      summary: `Operation ${i}`,
      parameters: [
        { name: 'id', in: 'path', required: true, schema: { type: 'string' } },
        { name: 'q', in: 'query', schema: { type: 'integer' } },
      ],
      responses: {
        '200': {
          description: 'ok',
          content: { 'application/json': { schema: { type: 'object', properties: { ok: { type: 'boolean' } } } } },
        },
      },
    };
    if (i % 2 === 1)
      op.requestBody = { content: { 'application/json': { schema: { type: 'object', properties: { name: { type: 'string' } } } } } };
    paths[`/r${i}/{id}`] = { [i % 2 === 1 ? 'post' : 'get']: op };
  }
  return { openapi: '3.0.3', info: { title: 'bench', version: '1' }, servers: [{ url: 'https://api.example.com' }], paths };
}
