-- Search moved into memory (src/catalog/search-index.ts): ranked, with words split out of names
-- and stems, and a page's cost independent of the catalogue. The FTS5 table and the triggers
-- that kept it in step cost every tool write two more row writes; they go.
DROP TRIGGER IF EXISTS tools_fts_insert;
DROP TRIGGER IF EXISTS tools_fts_update;
DROP TRIGGER IF EXISTS tools_fts_delete;
DROP TABLE IF EXISTS tools_fts;
