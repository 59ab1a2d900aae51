/**
 * Issue 29 in storage: migration 014's announcer sequence numbers only go up per announcer
 * process, survive a reopened database, and are forgotten for processes unheard since before a
 * given issued-at.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AnnouncerSequenceRows } from '../../src/store/announcer-sequence-rows.js';
import { openDatabase } from '../../src/store/database.js';
import { migrate } from '../../src/store/migrations.js';

describe('announcer sequence numbers (migration 014)', () => {
  it('takes a number only above the last one of its process, and keeps it across a reopen', () => {
    const dir = mkdtempSync(join(tmpdir(), 'announcer-seq-'));
    try {
      const path = join(dir, 'registry.db');
      const db = openDatabase(path);
      migrate(db);
      const rows = new AnnouncerSequenceRows(db);
      expect(rows.last('weather-bot', 'a')).toBeUndefined();
      expect(rows.advance('weather-bot', 'a', 3, 100)).toBe(true);
      expect(rows.advance('weather-bot', 'a', 3, 101)).toBe(false);
      expect(rows.advance('weather-bot', 'a', 2, 102)).toBe(false);
      // Another process of the announcer, and another announcer's process of the same id, count apart.
      expect(rows.advance('weather-bot', 'b', 1, 100)).toBe(true);
      expect(rows.advance('radio-bot', 'a', 1, 100)).toBe(true);
      expect(rows.advance('weather-bot', 'a', 4, 103)).toBe(true);
      db.close();
      const reopened = openDatabase(path);
      migrate(reopened);
      const again = new AnnouncerSequenceRows(reopened);
      expect(again.last('weather-bot', 'a')).toBe(4);
      expect(again.advance('weather-bot', 'a', 4, 104)).toBe(false);
      reopened.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('forgets processes last heard before an issued-at, and only those', () => {
    const db = openDatabase(':memory:');
    migrate(db);
    const rows = new AnnouncerSequenceRows(db);
    rows.advance('weather-bot', 'old', 7, 100);
    rows.advance('weather-bot', 'new', 2, 200);
    expect(rows.prune(150)).toBe(1);
    expect(rows.last('weather-bot', 'old')).toBeUndefined();
    expect(rows.last('weather-bot', 'new')).toBe(2);
    db.close();
  });
});
