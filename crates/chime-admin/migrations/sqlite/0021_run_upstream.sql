-- A workflow node's run carries its upstream nodes' results as data (a JSON object of strings
-- by node key), sent to the executor beside the parameter instead of pasted into a command,
-- and sent again with a retry. Empty for every other run; only inserts of node runs name it.
-- Keep in step with the other dialects.

ALTER TABLE run ADD COLUMN upstream TEXT NOT NULL DEFAULT '';
