-- Pause until: a job or a workflow with paused_until in the future is not fired until then
-- (epoch ms; 0: not paused). Its fire times stay where the pause found them, so when the pause
-- ends the fires it covered are missed fires, handled by its misfire policy as after an
-- outage. Keep in step with the other dialects.

ALTER TABLE job ADD COLUMN paused_until BIGINT NOT NULL DEFAULT 0;
ALTER TABLE workflow ADD COLUMN paused_until BIGINT NOT NULL DEFAULT 0;
