//! The batching window. Pending pods arrive one by one; the window opens on the first, and
//! closes when no new pod arrived for `idle`, or `max` after it opened, whichever is first.
//! Pure: the caller supplies the clock, so the windows are unit-tested without sleeping.

use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct Batcher {
    idle: Duration,
    max: Duration,
    opened: Option<Instant>,
    last: Option<Instant>,
}

impl Batcher {
    pub fn new(idle: Duration, max: Duration) -> Batcher {
        Batcher {
            idle,
            max,
            opened: None,
            last: None,
        }
    }

    /// A new pending pod was seen at `now`: opens the window or extends its idle timer.
    pub fn add(&mut self, now: Instant) {
        self.opened.get_or_insert(now);
        self.last = Some(now);
    }

    pub fn is_open(&self) -> bool {
        self.opened.is_some()
    }

    /// When the window closes if nothing else arrives; None when it is not open.
    pub fn deadline(&self) -> Option<Instant> {
        let (opened, last) = (self.opened?, self.last?);
        Some((last + self.idle).min(opened + self.max))
    }

    /// True (and the window is reset) when an open window has closed by `now`.
    pub fn take_if_closed(&mut self, now: Instant) -> bool {
        match self.deadline() {
            Some(d) if now >= d => {
                self.opened = None;
                self.last = None;
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn window_closes_after_idle_period() {
        let t0 = Instant::now();
        let mut b = Batcher::new(ms(1000), ms(10_000));
        assert!(!b.take_if_closed(t0));
        b.add(t0);
        b.add(t0 + ms(500));
        assert!(!b.take_if_closed(t0 + ms(1499)));
        assert!(b.take_if_closed(t0 + ms(1500)));
        assert!(!b.is_open());
    }

    #[test]
    fn steady_arrivals_close_at_max_window() {
        let t0 = Instant::now();
        let mut b = Batcher::new(ms(1000), ms(10_000));
        let mut t = t0;
        while t < t0 + ms(9_900) {
            b.add(t);
            assert!(!b.take_if_closed(t));
            t += ms(300);
        }
        assert_eq!(b.deadline(), Some(t0 + ms(10_000)));
        assert!(b.take_if_closed(t0 + ms(10_000)));
    }

    #[test]
    fn closed_window_reopens_on_next_pod() {
        let t0 = Instant::now();
        let mut b = Batcher::new(ms(100), ms(1000));
        b.add(t0);
        assert!(b.take_if_closed(t0 + ms(100)));
        b.add(t0 + ms(5000));
        assert_eq!(b.deadline(), Some(t0 + ms(5100)));
    }
}
