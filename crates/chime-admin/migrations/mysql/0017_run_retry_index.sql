-- A failed run names its retry (`retried_by`: the least id among the runs whose `retry_of` is
-- its id), looked up for every run listed. PostgreSQL needs the id added to the `run_retry_of`
-- index for that; an InnoDB secondary index already ends in the primary key, so this step
-- changes nothing here, and the dialects' migrations keep the same numbers.
-- Keep in step with the other dialects.

DO 0;
