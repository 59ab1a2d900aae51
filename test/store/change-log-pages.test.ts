/**
 * Issue 9 (a replay must not starve the others) and issue 10 (reads cost what their page costs):
 * the change log's pages are read by index and rowid ranges, never by sorting the rest of the log.
 * Before, each page of `GET /changes?since=0` sorted every later row (a temporary B-tree), so a
 * replay was quadratic in the log and 20 reopened streams held the event loop for seconds.
 */
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/database.js';
import { migrate } from '../../src/store/migrations.js';
import { CHANGE_LOG_READS } from '../../src/store/change-rows.js';
import { RegistryStore } from '../../src/store/registry-store.js';

function migrated() {
  const db = openDatabase(':memory:');
  migrate(db);
  return db;
}

describe('change-log pages', () => {
  it.each(Object.entries(CHANGE_LOG_READS))('%s reads by ranges, with no sort of its own', (_name, sql) => {
    const db = migrated();
    const plan = (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(0, 0, 0) as { detail: string }[]).map((r) => r.detail);
    expect(plan.join('\n')).not.toMatch(/TEMP B-TREE|SCAN changes/);
    expect(plan[0]).toMatch(/^SEARCH changes USING INTEGER PRIMARY KEY \(rowid>/);
  });

  it('walks the log in pages that resume inside a write, without gaps or repeats', () => {
    const db = migrated();
    const insert = db.prepare(
      "INSERT INTO changes (registry_index, kind, name, op, scopes_before, scopes_after) VALUES (?, 'tool', ?, 'upsert', NULL, '[]')",
    );
    // Writes of 1 to 7 rows each.
    let rows = 0;
    for (let index = 1; index <= 300; index++)
      for (let k = 0; k < (index % 7) + 1; k++) {
        insert.run(index, `t${index}-${k}`);
        rows++;
      }
    db.prepare('UPDATE registry_state SET registry_index = 300 WHERE id = 1').run();
    const store = new RegistryStore(db);
    expect(store.visibleThrough).toBe(300);
    for (const from of [0, 1, 150, 299, 300]) {
      const expected = db.prepare('SELECT name FROM changes WHERE registry_index > ? ORDER BY seq').pluck().all(from) as string[];
      const got: string[] = [];
      let page = store.changesSince(from, 16);
      while (page.length > 0) {
        got.push(...page.map((c) => c.name));
        page = store.changesAfterRow(page.at(-1)?.seq ?? 0, 16);
      }
      expect(got).toEqual(expected);
    }
    expect(rows).toBeGreaterThan(1000);
  });
});
