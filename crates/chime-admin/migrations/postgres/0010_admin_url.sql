-- admin_node.url: the base URL at which the other admins reach this one (its
-- --advertise-url), so a call for an executor linked to this admin only can be passed through it.
-- Keep in step with ../sqlite and ../mysql.

ALTER TABLE admin_node ADD COLUMN url VARCHAR(255) NOT NULL DEFAULT '';
