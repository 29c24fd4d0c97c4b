-- Roles per executor group: each non-admin user holds one role in each of their groups, as
-- `id:role` pairs (`3:editor,7:viewer`; roles viewer, operator, editor, group_admin). Empty for
-- users made before roles per group: their role in each of `group_ids` is then editor when
-- `can_write` is set, else viewer, as it was. Writing a user sets all three columns (group_ids
-- and can_write stay readable by older tools). Keep in step with the other dialects.

ALTER TABLE app_user ADD COLUMN group_roles VARCHAR(4096) NOT NULL DEFAULT '';
