/**
 * The one place the scope rule lives (issue 30). A tool's `scopes` is a list of ALTERNATIVES:
 * any one entry grants the tool, and an empty list needs no scope. Each entry is an OAuth scope
 * string in RFC 6749 section 3.3 syntax: one token, or several tokens separated by single spaces,
 * ALL of which are needed. So `["write:pets read:pets", "api_key"]` reads
 * (write:pets AND read:pets) OR api_key.
 *
 * Canonical stored form: an entry's tokens sorted and de-duplicated, joined by one space; entries
 * de-duplicated, in the order given. Kept pure (no zod, no I/O) so visibility, the caller checks,
 * the catalogue and the exports all share one reading and cannot drift apart.
 */

/** At most this many tokens in one entry: an entry is a conjunction a person writes, not a list. */
export const MAX_TOKENS_PER_ENTRY = 16;

/** The tokens of one entry, given as a space-separated string or an array of tokens. */
export function entryTokens(entry: string | readonly string[]): string[] {
  const raw = typeof entry === 'string' ? entry.split(' ') : entry;
  return [...new Set(raw.filter((token) => token.length > 0))].sort();
}

/** An entry in its canonical string form: tokens sorted, de-duplicated, joined by one space. */
export function normaliseEntry(entry: string | readonly string[]): string {
  return entryTokens(entry).join(' ');
}

/** A whole `scopes` list in canonical form: each entry normalised, repeats dropped, order kept. */
export function normaliseEntries(entries: readonly (string | readonly string[])[]): string[] {
  return [...new Set(entries.map(normaliseEntry))];
}

/**
 * Whether held scopes satisfy one entry: every token of it is held. An entry of one token (no
 * space) is looked up as it is: what entryTokens would make of it, without its array, set and
 * sort per call (issue 33: ~3 us of each bearer `GET /`, whose admin and read scopes are checked
 * per request; an empty entry has no tokens, and so is granted, as before).
 */
export function entryGranted(entry: string, held: ReadonlySet<string>): boolean {
  if (!entry.includes(' ')) return entry.length === 0 || held.has(entry);
  return entryTokens(entry).every((token) => held.has(token));
}

/** Whether held scopes grant a tool with these entries: no entries, or any one entry satisfied. */
export function grants(entries: readonly string[], held: ReadonlySet<string> | readonly string[]): boolean {
  if (entries.length === 0) return true;
  const set = held instanceof Set ? held : new Set(held as readonly string[]);
  return entries.some((entry) => entryGranted(entry, set));
}

/**
 * Every token any entry names, de-duplicated, in the order the entries name them: what a
 * challenge lists. The order is the route's or the tool's (a route's own scope first, then the
 * read-only one), which tells a client which to ask for first; sorting lost that.
 */
export function tokensOf(entries: readonly string[]): string[] {
  return [...new Set(entries.flatMap((entry) => entryTokens(entry)))];
}

/**
 * The tokens still missing from the nearest alternative (the one needing fewest more tokens; the
 * first such on a tie), or none when the held scopes already grant the entries.
 */
export function missingTokens(entries: readonly string[], held: ReadonlySet<string> | readonly string[]): string[] {
  if (entries.length === 0) return [];
  const set = held instanceof Set ? held : new Set(held as readonly string[]);
  let nearest: string[] | undefined;
  for (const entry of entries) {
    const missing = entryTokens(entry).filter((token) => !set.has(token));
    if (nearest === undefined || missing.length < nearest.length) nearest = missing;
    if (missing.length === 0) break;
  }
  return nearest ?? [];
}

/**
 * Reads entries as a person would: "write:pets and read:pets, or api_key"; single-token entries
 * alone read as before the rule ("a or b"), so existing messages do not change.
 */
export function describeEntries(entries: readonly string[]): string {
  const parts = entries.map((entry) => entryTokens(entry).join(' and '));
  return parts.join(entries.some((entry) => entry.includes(' ')) ? ', or ' : ' or ');
}

/** Whether some entry names this token: what `?scope=` filters on. */
export function namesToken(entries: readonly string[], token: string): boolean {
  return entries.some((entry) => entryTokens(entry).includes(token));
}
