//! Which recorded events are repeats: the pure half of [`super::Recorder`]. An event that
//! recurs (same object, type, reason and message) within [`Aggregator::window`] of its last
//! occurrence raises the `count` of the Event already written instead of writing another,
//! as client-go's recorder does. No clocks and no I/O: the caller passes `now` and performs
//! the [`Step`] it is told to.
//!
//! Memory stays flat: entries not seen for a window are swept, and past
//! [`Aggregator::capacity`] the least recently seen entry is dropped (its next occurrence
//! simply starts a new Event).

use std::collections::HashMap;

use k8s_openapi::api::core::v1::ObjectReference;

/// What makes two events the same event.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key {
    pub uid: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub type_: String,
    pub reason: String,
    pub message: String,
}

impl Key {
    pub fn new(about: &ObjectReference, type_: &str, reason: &str, message: &str) -> Key {
        let s = |v: &Option<String>| v.clone().unwrap_or_default();
        Key {
            uid: s(&about.uid),
            kind: s(&about.kind),
            namespace: s(&about.namespace),
            name: s(&about.name),
            type_: type_.into(),
            reason: reason.into(),
            message: message.into(),
        }
    }
}

/// What to write for one occurrence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// A new Event with `count: 1`; report its name with [`Aggregator::created`].
    Create,
    /// Set the existing Event `name` to `count` and `lastTimestamp` to now. If it is gone
    /// (404), call [`Aggregator::forget`] and observe again: that gives [`Step::Create`].
    Patch { name: String, count: i32 },
}

#[derive(Debug, Clone)]
struct Entry {
    /// The Event written for this key; `None` until a create succeeded.
    name: Option<String>,
    count: i32,
    last_seen: i64,
}

#[derive(Debug)]
pub struct Aggregator {
    /// Seconds: a repeat later than this after the last occurrence starts a new Event.
    pub window: i64,
    /// Most keys kept.
    pub capacity: usize,
    entries: HashMap<Key, Entry>,
    next_sweep: i64,
}

impl Aggregator {
    pub fn new(window: i64, capacity: usize) -> Aggregator {
        Aggregator {
            window,
            capacity: capacity.max(1),
            entries: HashMap::new(),
            next_sweep: i64::MIN,
        }
    }

    /// Keys held now.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// One occurrence of `key` at `now` (Unix seconds).
    pub fn observe(&mut self, key: Key, now: i64) -> Step {
        self.sweep(now);
        if let Some(e) = self.entries.get_mut(&key)
            && let Some(name) = &e.name
            && now - e.last_seen < self.window
        {
            e.count = e.count.saturating_add(1);
            e.last_seen = now;
            return Step::Patch {
                name: name.clone(),
                count: e.count,
            };
        }
        if !self.entries.contains_key(&key) && self.entries.len() >= self.capacity {
            self.evict_oldest();
        }
        self.entries.insert(
            key,
            Entry {
                name: None,
                count: 1,
                last_seen: now,
            },
        );
        Step::Create
    }

    /// The Event for `key` was created as `name`; its repeats patch it.
    pub fn created(&mut self, key: &Key, name: String) {
        if let Some(e) = self.entries.get_mut(key) {
            e.name = Some(name);
        }
    }

    /// The Event for `key` was not written or is gone: the next occurrence creates one.
    pub fn forget(&mut self, key: &Key) {
        self.entries.remove(key);
    }

    /// Drops entries not seen for a window; at most once per window.
    fn sweep(&mut self, now: i64) {
        if now < self.next_sweep {
            return;
        }
        let window = self.window;
        self.entries.retain(|_, e| now - e.last_seen < window);
        self.next_sweep = now.saturating_add(window);
    }

    fn evict_oldest(&mut self) {
        let oldest = self
            .entries
            .iter()
            .min_by_key(|(_, e)| e.last_seen)
            .map(|(k, _)| k.clone());
        if let Some(k) = oldest {
            self.entries.remove(&k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(pod: &str, message: &str) -> Key {
        let about = ObjectReference {
            kind: Some("Pod".into()),
            namespace: Some("ns".into()),
            name: Some(pod.into()),
            uid: Some(format!("uid-{pod}")),
            ..Default::default()
        };
        Key::new(&about, "Warning", "FailedScheduling", message)
    }

    #[test]
    fn a_repeat_within_the_window_patches_the_created_event_with_a_growing_count() {
        let mut a = Aggregator::new(600, 100);
        assert_eq!(a.observe(key("x", "no fit"), 0), Step::Create);
        a.created(&key("x", "no fit"), "x.abc".into());
        assert_eq!(
            a.observe(key("x", "no fit"), 30),
            Step::Patch {
                name: "x.abc".into(),
                count: 2
            }
        );
        assert_eq!(
            a.observe(key("x", "no fit"), 60),
            Step::Patch {
                name: "x.abc".into(),
                count: 3
            }
        );
    }

    #[test]
    fn a_different_message_type_or_object_is_a_different_event() {
        let mut a = Aggregator::new(600, 100);
        a.observe(key("x", "no fit"), 0);
        a.created(&key("x", "no fit"), "x.abc".into());
        assert_eq!(a.observe(key("x", "at limit"), 1), Step::Create);
        assert_eq!(a.observe(key("y", "no fit"), 1), Step::Create);
        let mut normal = key("x", "no fit");
        normal.type_ = "Normal".into();
        assert_eq!(a.observe(normal, 1), Step::Create);
        // A recreated object (same name, new uid) is another object.
        let mut recreated = key("x", "no fit");
        recreated.uid = "uid-x2".into();
        assert_eq!(a.observe(recreated, 1), Step::Create);
    }

    #[test]
    fn a_repeat_after_the_window_starts_a_new_event() {
        let mut a = Aggregator::new(600, 100);
        a.observe(key("x", "m"), 0);
        a.created(&key("x", "m"), "x.abc".into());
        assert!(matches!(a.observe(key("x", "m"), 599), Step::Patch { .. }));
        // The window counts from the last occurrence, not the first.
        assert!(matches!(a.observe(key("x", "m"), 1198), Step::Patch { .. }));
        assert_eq!(a.observe(key("x", "m"), 1798), Step::Create);
    }

    #[test]
    fn an_event_never_created_is_created_again_not_patched() {
        let mut a = Aggregator::new(600, 100);
        assert_eq!(a.observe(key("x", "m"), 0), Step::Create);
        // The create failed: no `created` call.
        assert_eq!(a.observe(key("x", "m"), 5), Step::Create);
    }

    #[test]
    fn a_forgotten_event_is_created_afresh_with_count_one() {
        let mut a = Aggregator::new(600, 100);
        a.observe(key("x", "m"), 0);
        a.created(&key("x", "m"), "x.abc".into());
        a.observe(key("x", "m"), 1);
        // The patch found no Event (404).
        a.forget(&key("x", "m"));
        assert_eq!(a.observe(key("x", "m"), 2), Step::Create);
        a.created(&key("x", "m"), "x.def".into());
        assert_eq!(
            a.observe(key("x", "m"), 3),
            Step::Patch {
                name: "x.def".into(),
                count: 2
            }
        );
    }

    #[test]
    fn the_cache_never_holds_more_than_its_capacity_and_drops_the_least_recent() {
        let mut a = Aggregator::new(600, 3);
        for (i, pod) in ["a", "b", "c"].iter().enumerate() {
            a.observe(key(pod, "m"), i as i64);
            a.created(&key(pod, "m"), format!("{pod}.1"));
        }
        // "a" is seen again, so "b" is now the least recent.
        assert!(matches!(a.observe(key("a", "m"), 10), Step::Patch { .. }));
        assert_eq!(a.observe(key("d", "m"), 11), Step::Create);
        assert_eq!(a.len(), 3);
        assert_eq!(a.observe(key("b", "m"), 12), Step::Create, "b was evicted");
        assert!(matches!(a.observe(key("a", "m"), 13), Step::Patch { .. }));
        assert!(a.len() <= 3);
    }

    #[test]
    fn entries_idle_for_a_window_are_swept() {
        let mut a = Aggregator::new(600, 100);
        for i in 0..50 {
            a.observe(key(&format!("p{i}"), "m"), 0);
        }
        assert_eq!(a.len(), 50);
        a.observe(key("late", "m"), 700);
        assert_eq!(a.len(), 1, "only the new key is left");
    }
}
