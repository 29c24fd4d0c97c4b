-- Alarms: runs that failed before alarms existed are marked "no alarm needed" (1), so the first
-- start with alarms does not send a flood of alarms for old failures.
UPDATE run SET alarm_status = 1
WHERE alarm_status = 0
  AND ((trigger_code = 200 AND handle_code NOT IN (0, 200)) OR trigger_code NOT IN (0, 200, -1));

-- Admins announce themselves here while they run, so an admin that holds every partition
-- learns that another one started and gives back its share (a newcomer holds no lease yet).
CREATE TABLE admin_node (
    node_id    VARCHAR(128) PRIMARY KEY,
    expires_at BIGINT       NOT NULL
);
