-- The console and the REST API list runs by time range (scheduled_at), and the dashboard counts
-- them per day; without this index a range far back reads every newer run first.
-- Keep in step with ../sqlite and ../postgres.

CREATE INDEX run_scheduled ON run (scheduled_at);
