//! Locks that survive a panic. A `std::sync` lock held by a thread that panics is "poisoned":
//! every later `.lock().unwrap()` panics too, so one bug in one reconcile would take down
//! every later call of the controller. The data behind Adze's locks are caches, sets and
//! counters whose every update is a single call on a std collection (left consistent when a
//! panic unwinds past it), so the next caller takes the data as it is, after a warning.

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

fn recovered<G>(what: &'static str, e: PoisonError<G>) -> G {
    tracing::warn!(
        lock = what,
        "a thread panicked while holding this lock; carrying on with its data"
    );
    e.into_inner()
}

/// [`Mutex::lock`] that recovers from poisoning (and clears it, so the warning is logged once
/// per panic).
pub trait MutexExt<T: ?Sized> {
    fn lock_or_recover(&self) -> MutexGuard<'_, T>;
}

impl<T: ?Sized> MutexExt<T> for Mutex<T> {
    fn lock_or_recover(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(|e| {
            self.clear_poison();
            recovered("mutex", e)
        })
    }
}

/// [`RwLock::read`] and [`RwLock::write`] that recover from poisoning, as [`MutexExt`].
pub trait RwLockExt<T: ?Sized> {
    fn read_or_recover(&self) -> RwLockReadGuard<'_, T>;
    fn write_or_recover(&self) -> RwLockWriteGuard<'_, T>;
}

impl<T: ?Sized> RwLockExt<T> for RwLock<T> {
    fn read_or_recover(&self) -> RwLockReadGuard<'_, T> {
        self.read().unwrap_or_else(|e| {
            self.clear_poison();
            recovered("rwlock", e)
        })
    }

    fn write_or_recover(&self) -> RwLockWriteGuard<'_, T> {
        self.write().unwrap_or_else(|e| {
            self.clear_poison();
            recovered("rwlock", e)
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn poison<T: Send + Sync + 'static>(lock: Arc<T>, hold: impl FnOnce(&T) + Send + 'static) {
        let r = std::thread::spawn(move || hold(&lock)).join();
        assert!(r.is_err(), "the holder was meant to panic");
    }

    #[test]
    fn a_poisoned_mutex_still_locks_and_keeps_its_data() {
        let m = Arc::new(Mutex::new(vec![1]));
        poison(m.clone(), |m| {
            let mut g = m.lock().unwrap();
            g.push(2);
            panic!("bug while holding the lock");
        });
        assert!(m.is_poisoned());
        assert_eq!(*m.lock_or_recover(), vec![1, 2]);
        m.lock_or_recover().push(3);
        assert!(!m.is_poisoned(), "recovery clears the poison");
        assert_eq!(*m.lock().unwrap(), vec![1, 2, 3]);
    }

    #[test]
    fn a_poisoned_rwlock_still_reads_and_writes() {
        let l = Arc::new(RwLock::new(0u32));
        poison(l.clone(), |l| {
            *l.write().unwrap() = 7;
            let _g = l.write().unwrap();
            panic!("bug while holding the lock");
        });
        assert!(l.is_poisoned());
        assert_eq!(*l.read_or_recover(), 7);
        *l.write_or_recover() += 1;
        assert_eq!(*l.read_or_recover(), 8);
    }
}
