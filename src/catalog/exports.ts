/**
 * The bytes of `GET /?format=` (issue 12): a view's tools in another vendor's or protocol's
 * shape, built once per view and format and kept as long as the view is (the view is the
 * key of a WeakMap, so a write, which drops the views, drops these too). A repeated request
 * then costs what the plain `GET /` costs: a lookup and the bytes sent as they are.
 */
import { createHash } from 'node:crypto';
import {
  PROMPT_HEADING,
  agUiToolOf,
  anthropicToolOf,
  mcpExportOf,
  openAiChatToolOf,
  openAiResponsesToolOf,
  openAiStrictToolOf,
  promptLineOf,
  type ExportFormat,
  type OpenAiChatTool,
  type SkippedTool,
} from '../model/exports.js';
import type { Tool } from '../model/normalise.js';
import type { CatalogView } from './views.js';

/** Bumped whenever a format's conversion changes, so that an older ETag never matches. */
const EXPORT_VERSION = 1;

export interface ExportBody {
  body: Buffer;
  /** Strong, and different for each format of the same view. */
  etag: string;
  contentType: string;
}

const JSON_TYPE = 'application/json; charset=utf-8';
const TEXT_TYPE = 'text/plain; charset=utf-8';

const built = new WeakMap<CatalogView, Map<ExportFormat, ExportBody>>();

/** The view in `format`, built on first use and then served from memory. */
export function exportOf(view: CatalogView, format: ExportFormat): ExportBody {
  let formats = built.get(view);
  if (!formats) {
    formats = new Map();
    built.set(view, formats);
  }
  let entry = formats.get(format);
  if (!entry) {
    const { text, contentType } = render(view.tools.map((t) => t.tool), format);
    // The view's ETag already hashes what its tools are; the format and version tell exports apart.
    const etag = `"${createHash('sha256').update(`${EXPORT_VERSION}\u0000${format}\u0000${view.etag}`).digest('base64url').slice(0, 32)}"`;
    entry = { body: Buffer.from(text), etag, contentType };
    formats.set(format, entry);
  }
  return entry;
}

function render(tools: readonly Tool[], format: ExportFormat): { text: string; contentType: string } {
  switch (format) {
    case 'openai':
      return json(tools.map(openAiChatToolOf));
    case 'openai-responses':
      return json(tools.map(openAiResponsesToolOf));
    case 'openai-strict': {
      const strict: OpenAiChatTool[] = [];
      const skipped: SkippedTool[] = [];
      for (const tool of tools) {
        const result = openAiStrictToolOf(tool);
        if ('tool' in result) strict.push(result.tool);
        else skipped.push(result.skipped);
      }
      return json({ tools: strict, skipped });
    }
    case 'anthropic':
      return json(tools.map(anthropicToolOf));
    case 'mcp':
      return json({ tools: tools.map(mcpExportOf) });
    case 'ag-ui':
      return json(tools.map(agUiToolOf));
    case 'prompt':
      return { text: [PROMPT_HEADING, ...tools.map(promptLineOf)].join('\n') + '\n', contentType: TEXT_TYPE };
  }
}

const json = (value: unknown) => ({ text: JSON.stringify(value), contentType: JSON_TYPE });
