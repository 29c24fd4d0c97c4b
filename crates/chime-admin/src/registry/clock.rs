//! The admin's up-clock: how long this admin has been up and able to hear executors, in
//! milliseconds, by which an executor's silence is judged.
//!
//! An executor counts as dead after the dead timeout without a heartbeat. Judged by the wall
//! clock, every executor looked dead the moment an admin came back from an outage longer than
//! that (it could not hear their heartbeats while it was down), after the admin was paused
//! (SIGSTOP, a VM paused), after its database was away (heartbeats could not be recorded), and
//! whenever the wall clock stepped forward: their runs were failed as lost although the
//! executors were alive and about to deliver the results. The up-clock counts only time the
//! admin was running with its database: a ticker adds the monotonic time since its last tick,
//! at most [`MAX_STEP`] per tick, and nothing while the database fails (an error that says it
//! cannot be reached, or a read that stays unanswered: `super::DATABASE_STALL`). Each of these events is
//! also a *disruption* — the admin's start, a tick later than [`MAX_STEP`] (a pause or a stalled
//! process), the database coming back, and a step of the wall clock — after which every
//! executor counts as heard at that moment: it gets a full dead timeout of up time to be heard
//! again, whatever it was doing before ([`alive`]).
//!
//! Pure: the caller passes the clocks' readings, so the rules are tested with made-up times.

use std::time::Duration;

/// How often the up-clock ticks.
pub const TICK: Duration = Duration::from_millis(250);

/// Most up time one tick counts. A tick that comes later than this found the admin paused or
/// stalled: it counts this much, and is a disruption.
pub const MAX_STEP: Duration = Duration::from_secs(2);

/// A wall clock that moved this much more (or less) than the monotonic clock over one tick was
/// stepped (NTP correcting a large offset, a VM resumed, an operator): a disruption. Far above
/// NTP's slewing, which corrects at most 0.5 ms per second.
pub const WALL_STEP: Duration = Duration::from_secs(1);

fn ms(d: Duration) -> i64 {
    d.as_millis() as i64
}

/// Whether an executor last heard at up-clock time `seen` counts as alive at `now`, when the
/// admin's last disruption was at `disrupted` (all three up-clock ms): it is dead only once
/// `dead_timeout` of up time passed since it was heard, or since the disruption if that is
/// later.
pub fn alive(seen: i64, now: i64, disrupted: i64, dead_timeout: Duration) -> bool {
    now - seen.max(disrupted) < ms(dead_timeout)
}

/// Until when (up-clock ms) an executor heard at `seen` counts as alive, if nothing changes.
pub fn alive_until(seen: i64, disrupted: i64, dead_timeout: Duration) -> i64 {
    seen.max(disrupted).saturating_add(ms(dead_timeout))
}

/// The up-clock as read by the rules: the time now and of the last disruption (up-clock ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpTime {
    /// Up time now.
    pub now: i64,
    /// Up time of the last disruption (the start, a pause, the database back, a wall step).
    pub disrupted: i64,
}

impl UpTime {
    /// True when the admin has been up, with its database and without a pause or a wall-clock
    /// step, for at least `window`: long enough for an executor to have delivered within it.
    pub fn settled_for(&self, window: Duration) -> bool {
        self.now - self.disrupted >= ms(window)
    }
}

/// What a tick found besides the up time it counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TickEvent {
    /// Nothing unusual.
    Counted,
    /// The tick came later than [`MAX_STEP`]: the admin was paused or stalled.
    Paused,
    /// The wall clock moved by this many ms more than the monotonic clock (negative: less).
    WallStepped(i64),
}

/// The up-clock's state. Feed it every [`TICK`] with the monotonic and wall clocks.
#[derive(Debug, Clone)]
pub struct UpClock {
    up: i64,
    disrupted: i64,
    last_mono: i64,
    last_wall: i64,
    database_ok: bool,
    /// The wall clock (ms, after the step) when the last wall-clock step was seen; 0: none.
    wall_stepped_at: i64,
}

impl UpClock {
    /// A clock starting now (the admin's start: a disruption at up time 0), with the monotonic
    /// clock at `mono` ms and the wall clock at `wall` ms.
    pub fn new(mono: i64, wall: i64) -> UpClock {
        UpClock {
            up: 0,
            disrupted: 0,
            last_mono: mono,
            last_wall: wall,
            database_ok: true,
            wall_stepped_at: 0,
        }
    }

    /// The up time now and of the last disruption.
    pub fn read(&self) -> UpTime {
        UpTime {
            now: self.up,
            disrupted: self.disrupted,
        }
    }

    /// The wall-clock time (ms, after the step) at which the last step of the wall clock was
    /// seen, 0 if none was: stamps taken before it are not comparable with those taken after.
    pub fn wall_stepped_at(&self) -> i64 {
        self.wall_stepped_at
    }

    /// Counts the time since the last tick (`mono`, `wall`: the clocks now, ms).
    pub fn tick(&mut self, mono: i64, wall: i64) -> TickEvent {
        let elapsed = (mono - self.last_mono).max(0);
        let wall_elapsed = wall - self.last_wall;
        self.last_mono = mono;
        self.last_wall = wall;
        let mut event = TickEvent::Counted;
        if self.database_ok {
            self.up += elapsed.min(ms(MAX_STEP));
        }
        if elapsed > ms(MAX_STEP) {
            event = TickEvent::Paused;
            self.disrupted = self.up;
        }
        let step = wall_elapsed - elapsed;
        if step.abs() > ms(WALL_STEP) {
            event = TickEvent::WallStepped(step);
            self.disrupted = self.up;
            self.wall_stepped_at = wall;
        }
        event
    }

    /// The database failed a heartbeat's write or a refresh: no up time counts until it works
    /// again (executors' heartbeats cannot be recorded meanwhile).
    pub fn database_failed(&mut self) {
        self.database_ok = false;
    }

    /// The database answered. After a failure this is a disruption. True if it was failing.
    pub fn database_answered(&mut self) -> bool {
        let was_failing = !self.database_ok;
        self.database_ok = true;
        if was_failing {
            self.disrupted = self.up;
        }
        was_failing
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEAD: Duration = Duration::from_secs(90);

    /// Ticks every 250 ms from `from` to `to` (monotonic ms), the wall clock `wall_offset` ahead.
    fn run(clock: &mut UpClock, from: i64, to: i64, wall_offset: i64) {
        let mut t = from;
        while t < to {
            t += 250;
            assert_eq!(clock.tick(t, t + wall_offset), TickEvent::Counted);
        }
    }

    #[test]
    fn up_time_follows_the_monotonic_clock_while_ticks_come() {
        let mut c = UpClock::new(1_000, 5_000_000);
        run(&mut c, 1_000, 61_000, 4_999_000);
        assert_eq!(
            c.read(),
            UpTime {
                now: 60_000,
                disrupted: 0
            }
        );
        assert!(c.read().settled_for(Duration::from_secs(60)));
        assert!(!c.read().settled_for(Duration::from_secs(61)));
    }

    #[test]
    fn a_pause_counts_one_step_and_restarts_the_grace() {
        let mut c = UpClock::new(0, 0);
        run(&mut c, 0, 100_000, 0);
        // SIGSTOP for 100 s: the next tick comes 100 s late, on both clocks.
        assert_eq!(c.tick(200_000, 200_000), TickEvent::Paused);
        let t = c.read();
        assert_eq!(
            t,
            UpTime {
                now: 102_000,
                disrupted: 102_000
            }
        );
        // An executor last heard 60 s before the pause is alive for a full dead timeout more.
        assert!(alive(40_000, t.now, t.disrupted, DEAD));
        assert!(alive(40_000, t.now + 89_999, t.disrupted, DEAD));
        assert!(!alive(40_000, t.now + 90_000, t.disrupted, DEAD));
        assert!(!t.settled_for(Duration::from_secs(1)));
    }

    #[test]
    fn no_up_time_counts_while_the_database_fails() {
        let mut c = UpClock::new(0, 0);
        run(&mut c, 0, 10_000, 0);
        c.database_failed();
        run(&mut c, 10_000, 130_000, 0);
        assert_eq!(c.read().now, 10_000, "two minutes without a database count nothing");
        assert!(c.database_answered());
        assert!(!c.database_answered(), "once");
        run(&mut c, 130_000, 131_000, 0);
        assert_eq!(
            c.read(),
            UpTime {
                now: 11_000,
                disrupted: 10_000
            }
        );
    }

    #[test]
    fn a_wall_clock_step_is_a_disruption() {
        let mut c = UpClock::new(0, 1_000_000);
        run(&mut c, 0, 30_000, 1_000_000);
        // The wall clock jumps five minutes ahead between two ticks.
        assert_eq!(c.tick(30_250, 1_330_250), TickEvent::WallStepped(300_000));
        assert_eq!(
            c.read(),
            UpTime {
                now: 30_250,
                disrupted: 30_250
            }
        );
        assert_eq!(c.wall_stepped_at(), 1_330_250);
        // And back: a step too.
        assert_eq!(c.tick(30_500, 1_030_500), TickEvent::WallStepped(-300_000));
        // NTP slewing (half a millisecond per second) is no step.
        run(&mut c, 30_500, 40_000, 1_000_000);
        assert_eq!(c.tick(40_250, 1_040_250 + 1), TickEvent::Counted);
    }

    #[test]
    fn the_start_is_a_disruption() {
        let c = UpClock::new(123, 456);
        let t = c.read();
        // Whatever the database says of an executor's last heartbeat, it is alive at the start.
        assert!(alive(0, t.now, t.disrupted, DEAD));
        assert_eq!(alive_until(0, t.disrupted, DEAD), 90_000);
    }
}
