/**
 * Shared by the issue-12 tests: a loopback HTTP tool host that records what reaches it, the
 * schemas of an order tool (nested objects, enum, formats, anyOf, $defs with a local $ref),
 * and a snapshot of what the registry serves and stores.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';

export interface ToolHost {
  port: number;
  /** Every request body received, by path. */
  received: { url: string; body: unknown }[];
  close(): Promise<void>;
}

/** Answers every POST with `{"ok": true, "got": <body>}` as JSON. */
export async function startToolHost(): Promise<ToolHost> {
  const received: ToolHost['received'] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body: unknown = JSON.parse(Buffer.concat(chunks).toString() || 'null');
      received.push({ url: req.url ?? '', body });
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true, got: body }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export const ORDER_INPUT = {
  type: 'object',
  description: 'An order for the warehouse',
  properties: {
    customer: { $ref: '#/$defs/customer' },
    items: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        properties: { name: { type: 'string', minLength: 1 }, quantity: { type: 'integer', minimum: 1 } },
        required: ['name', 'quantity'],
        additionalProperties: false,
      },
    },
    priority: { type: 'string', enum: ['low', 'normal', 'high'], description: 'How soon' },
    contact: {
      anyOf: [
        { type: 'string', format: 'email' },
        { type: 'string', format: 'uri' },
      ],
    },
    deliverBy: { type: 'string', format: 'date' },
    note: { type: ['string', 'null'] },
  },
  required: ['customer', 'items'],
  additionalProperties: false,
  $defs: {
    customer: {
      type: 'object',
      properties: { id: { type: 'string', format: 'uuid' }, name: { type: 'string' } },
      required: ['id'],
    },
  },
} as const;

export const ORDER_OUTPUT = { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] } as const;

export const VALID_ORDER = {
  customer: { id: '0b6f1c52-4a4e-4f0a-9f1e-2d3c4b5a6f70', name: 'Ada' },
  items: [{ name: 'bolt', quantity: 12 }],
  priority: 'high',
  contact: 'ada@example.com',
  deliverBy: '2026-03-01',
  note: null,
};

/** What the registry serves and has stored: the full view, its index, and the export. */
export async function snapshot(
  app: FastifyInstance,
  admin: Record<string, string>,
): Promise<{ index: string | undefined; view: string; exported: string }> {
  const view = await app.inject({ method: 'GET', url: '/' });
  const exported = await app.inject({ method: 'GET', url: '/export', headers: admin });
  return { index: view.headers['x-registry-index'] as string | undefined, view: view.body, exported: exported.body };
}
