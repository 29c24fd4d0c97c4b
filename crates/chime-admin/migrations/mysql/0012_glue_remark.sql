-- glue_version.remark: what changed in a script version, as XXL-JOB keeps it for each GLUE
-- version (`glue_remark`), so versions brought over by `chime import xxl-job` keep theirs.
-- Keep in step with the other dialects.

ALTER TABLE glue_version ADD COLUMN remark VARCHAR(128) NOT NULL DEFAULT '';
