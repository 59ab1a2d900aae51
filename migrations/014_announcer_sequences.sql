-- Signed announcements (src/announce/, issue 29): the highest sequence number this registry took
-- from each announcer's process (`instance`), so that a replayed or older announcement is refused,
-- also after a restart. Each replica keeps its own: every process hears the topic itself, so the
-- table is never replicated (a replicated row would make the other replicas refuse the very
-- announcement as a replay). `iat` (seconds) is the last accepted one's issued-at: rows older
-- than the clock-skew bound may go, since such an announcement is refused for its age anyway.
CREATE TABLE announcer_sequences (
  subject TEXT NOT NULL,
  instance TEXT NOT NULL,
  seq INTEGER NOT NULL,
  iat INTEGER NOT NULL,
  PRIMARY KEY (subject, instance)
) STRICT, WITHOUT ROWID;
