-- PostgreSQL keeps room on the run table's pages for updates in place (HOT). InnoDB has no fill
-- factor for a table, so this step changes nothing here, and the dialects' migrations keep the
-- same numbers.
-- Keep in step with the other dialects.

DO 0;
