-- PostgreSQL keeps room on the run table's pages for updates in place (HOT). SQLite updates a
-- row in place anyway, so this step changes nothing here, and the dialects' migrations keep the
-- same numbers.
-- Keep in step with the other dialects.

SELECT 1;
