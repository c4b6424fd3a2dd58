-- Search speed (docs/search.md, "What a page costs").
--
--   search_generation  a number that grows whenever a transaction that wrote artifacts commits (a new artifact or
--                      edition, a report, a listing's arrival or departure, a price, the rank refresh): the catalog
--                      service reuses a search page it built while the number has not moved since (and for at most
--                      a few seconds, which bounds how stale the inline trust score can be). The number is the sum
--                      of one counter per server process (backend pid): each writing statement adds one to its own
--                      process's row, so writers never wait on one another's row lock (one shared counter row would
--                      hold every artifact writer behind the first until it commits), and, unlike a sequence, the
--                      addition is seen only once its transaction commits, so a page read before a commit is never
--                      stored under a number that already counts that commit.
CREATE TABLE search_generation (backend integer PRIMARY KEY, writes bigint NOT NULL);

CREATE FUNCTION search_generation_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO search_generation (backend, writes) VALUES (pg_backend_pid(), 1)
  ON CONFLICT (backend) DO UPDATE SET writes = search_generation.writes + 1;
  RETURN NULL;
END $$;
-- Once per statement, not per row: the corpus loader's statement of 500 artifacts moves it once.
CREATE TRIGGER artifacts_search_generation
  AFTER INSERT OR UPDATE OR DELETE ON artifacts
  FOR EACH STATEMENT EXECUTE FUNCTION search_generation_bump();
