/**
 * Issue 34: a tool's deprecation, settable by operators (`PUT /tools/{name}/deprecation`). A
 * deprecated tool stays listed and callable until its sunset, with its deprecation in every
 * record and the `Deprecation` (RFC 9745), `Sunset` (RFC 8594) and `Link` headers on its own
 * routes; from the sunset on it leaves every view (src/catalog/snapshot.ts).
 */
import { z } from 'zod';
import { ToolNameSchema } from './schemas.js';
import { text } from './text-checks.js';

/** The body of `PUT /tools/{name}/deprecation`: every field optional, no other field taken. */
export const DeprecationSchema = z
  .strictObject({
    /** When the tool stops working and leaves every view (RFC 3339 with an offset). */
    sunset: z.iso
      .datetime({ offset: true })
      .optional()
      .describe('When the tool stops being callable and leaves every view: an RFC 3339 time with `Z` or an offset. Absent: no date set.'),
    /** The tool to use instead: it must exist, and not be the deprecated tool itself. */
    replacement: ToolNameSchema.optional().describe(
      'The name of the tool to use instead; it must be a registered tool other than this one.',
    ),
    /** Why, for operators and agents: held to the rules of descriptions. */
    reason: text(1024)
      .min(1, 'must not be empty')
      .optional()
      .describe('Why the tool is deprecated (at most 1024 characters, the characters descriptions may hold).'),
  })
  .meta({ id: 'DeprecationBody', description: 'A deprecation as an operator sets it: every field optional.' });
export type DeprecationBody = z.infer<typeof DeprecationSchema>;

/** A tool's deprecation as stored and shown: the body, normalised, with the time it was set. */
export const ToolDeprecationSchema = z
  .strictObject({
    /** When the deprecation was set: what the `Deprecation` header carries. */
    since: z.iso.datetime().describe('When the deprecation was set (UTC): what the `Deprecation` header carries.'),
    sunset: z.iso.datetime().optional().describe('When the tool stops being callable and leaves every view (UTC).'),
    replacement: ToolNameSchema.optional().describe('The tool to use instead.'),
    reason: z.string().optional().describe('Why the tool is deprecated.'),
  })
  .meta({
    id: 'ToolDeprecation',
    description: "A tool's deprecation (issue 34): present only on deprecated tools, whose `status` is `deprecated`.",
  });
export type ToolDeprecation = z.infer<typeof ToolDeprecationSchema>;

/** The stored deprecation of a body set at `since`: the sunset in UTC, so that times compare as strings. */
export function deprecationOf(body: DeprecationBody, since: string): ToolDeprecation {
  return {
    since,
    ...(body.sunset !== undefined && { sunset: new Date(body.sunset).toISOString() }),
    ...(body.replacement !== undefined && { replacement: body.replacement }),
    ...(body.reason !== undefined && { reason: body.reason }),
  };
}

/** Whether a deprecation's sunset has come by `now` (an ISO time in UTC, or epoch milliseconds). */
export function pastSunset(deprecation: ToolDeprecation | undefined, now: number): boolean {
  return deprecation?.sunset !== undefined && Date.parse(deprecation.sunset) <= now;
}

/**
 * The response headers of a deprecated tool's own routes: `Deprecation: @<unix seconds>` of the
 * time it was set (RFC 9745), `Sunset` as an IMF-fixdate (RFC 8594), and a `Link` to the
 * replacement's record as its `successor-version` (RFC 5829). `toolUrl` makes a tool's URL.
 */
export function deprecationHeaders(deprecation: ToolDeprecation, toolUrl: (name: string) => string): Record<string, string> {
  const headers: Record<string, string> = { deprecation: `@${Math.floor(Date.parse(deprecation.since) / 1000)}` };
  if (deprecation.sunset !== undefined) headers.sunset = new Date(deprecation.sunset).toUTCString();
  if (deprecation.replacement !== undefined) headers.link = `<${toolUrl(deprecation.replacement)}>; rel="successor-version"`;
  return headers;
}

/** The note a description gains where an export's format has no place for the deprecation. */
export function deprecationNote(deprecation: ToolDeprecation): string {
  const parts = ['Deprecated'];
  if (deprecation.replacement !== undefined) parts.push(`: use ${deprecation.replacement} instead`);
  if (deprecation.sunset !== undefined)
    parts.push(`${deprecation.replacement !== undefined ? ';' : ':'} stops working at ${deprecation.sunset}`);
  return `${parts.join('')}.`;
}
