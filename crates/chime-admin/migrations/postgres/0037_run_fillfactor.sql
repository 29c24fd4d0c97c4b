-- Fewer index writes per run. A run is updated three times (marked as being sent, its trigger
-- result, its result), and PostgreSQL writes each update as a new row version. Such a version
-- can stay on its page without new index entries (a HOT update) when no indexed column changed
-- and the page has room; runs were inserted into full pages, so 4 % of updates were HOT and the
-- rest each wrote an entry into all seven of the table's indexes. Pages kept half empty let the
-- send mark, which changes no indexed column, be HOT: 30 % of updates, against a bound of a
-- third. Under 5,000 fires a second (docs/BENCHMARKS.md) the database used less CPU and the
-- lateness p99 was lower, and the table was no larger, since HOT versions are pruned in place.
-- The setting applies to pages written from now on.
-- Keep in step with the other dialects.

ALTER TABLE run SET (fillfactor = 50);
