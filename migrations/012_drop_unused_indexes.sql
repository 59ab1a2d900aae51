-- Nothing reads tools or tool services by modify_index: the catalogue is in memory, and change
-- feeds read the change log (changes_by_index). The two indexes only cost every write: a B-tree
-- insert for a new record, a delete and an insert for a replaced one (at a random place in the
-- index: one more page in the write's commit). A replacing PUT cost ~12% less CPU without them
-- (service-level A/B, 10,000 tools, batches of 8: median 322 against 366 us a write).
DROP INDEX IF EXISTS tools_by_modify_index;
DROP INDEX IF EXISTS tool_services_by_modify_index;
