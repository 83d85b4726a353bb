//! The time, passed in: everything on the token path that compares against "now" (freshness,
//! expiry, the cool-down, `expires_in`, ID-token `exp`/`nbf`) asks a [`Clock`], so that tests
//! state times directly instead of rewriting cached files.

use chrono::{DateTime, Utc};

/// Where "now" comes from.
pub trait Clock: Send + Sync {
    fn now(&self) -> DateTime<Utc>;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that says what it is told (tests).
#[cfg(test)]
#[derive(Debug)]
pub struct FixedClock(std::sync::Mutex<DateTime<Utc>>);

#[cfg(test)]
impl FixedClock {
    pub fn at(now: DateTime<Utc>) -> Self {
        FixedClock(std::sync::Mutex::new(now))
    }

    /// Moves the clock forward (or back, with a negative duration).
    pub fn advance(&self, by: chrono::Duration) {
        let mut now = self.0.lock().unwrap_or_else(|p| p.into_inner());
        *now += by;
    }
}

#[cfg(test)]
impl Clock for FixedClock {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}
