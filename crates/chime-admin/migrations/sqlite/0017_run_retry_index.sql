-- A failed run names its retry (`retried_by`: the least id among the runs whose `retry_of` is
-- its id), looked up for every run listed. SQLite's index over `(retry_of)` already ends in
-- the row id, which `id` is; naming it says so, as the PostgreSQL index must.
-- Keep in step with the other dialects.

DROP INDEX run_retry_of;
CREATE INDEX run_retry_of ON run (retry_of, id);
