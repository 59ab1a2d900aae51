/**
 * Variables that look like a misspelt setting (`JWT_SECERT`, `DATABSE_PATH`): a setting the
 * environment misspells is silently unset, and an unset JWT_SECRET quietly means dev mode. Only
 * names shaped like ours (upper case, digits and underscores) are looked at, and only those one
 * or two edits (insert, delete, replace, or swap two neighbours) from a setting: one edit for
 * the four-letter HOST and PORT, so that HOME is not taken for HOST.
 */
import { SETTING_NAMES } from '../config/settings.js';

/** Variables the CLI reads besides the settings (data commands): never a typo of one. */
const OTHER_VARIABLES: ReadonlySet<string> = new Set(['REGISTRY_URL', 'REGISTRY_TOKEN']);
const KNOWN: ReadonlySet<string> = new Set([...SETTING_NAMES, ...OTHER_VARIABLES]);
const OUR_SHAPE = /^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$/;

export interface MisspeltSetting {
  variable: string;
  /** The setting it is closest to. */
  meant: string;
}

/** Edits a setting of this length may be from a variable for it to count as a typo. */
const editsAllowed = (setting: string) => (setting.length <= 5 ? 1 : 2);

/**
 * Optimal string alignment distance (Damerau-Levenshtein without edits of edited parts), or
 * `max + 1` once it must exceed `max`: two rows of the table, so a few microseconds a pair.
 */
function distance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  let before = new Array<number>(b.length + 1).fill(0);
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, (before[j - 2] ?? 0) + 1);
      current.push(d);
      rowMin = Math.min(rowMin, d);
    }
    if (rowMin > max) return max + 1;
    before = previous;
    previous = current;
  }
  return previous[b.length] ?? max + 1;
}

/** The variables of `env` that are probably misspelt settings, each with the setting it is closest to. */
export function misspeltSettings(env: NodeJS.ProcessEnv): MisspeltSetting[] {
  const found: MisspeltSetting[] = [];
  for (const variable of Object.keys(env)) {
    if (KNOWN.has(variable) || !OUR_SHAPE.test(variable)) continue;
    let best: { setting: string; edits: number } | undefined;
    for (const setting of SETTING_NAMES) {
      const max = editsAllowed(setting);
      const edits = distance(variable, setting, Math.min(max, best === undefined ? max : best.edits - 1));
      if (edits <= max && (best === undefined || edits < best.edits)) best = { setting, edits };
    }
    if (best !== undefined) found.push({ variable, meant: best.setting });
  }
  return found.sort((x, y) => (x.variable < y.variable ? -1 : 1));
}

/** The one-line warning for a misspelt setting. */
export function misspeltWarning({ variable, meant }: MisspeltSetting): string {
  return `${variable} is not a setting and is ignored; did you mean ${meant}?`;
}
