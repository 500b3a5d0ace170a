//! Open writers and readers behind opaque `long` handles.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use jni::sys::jlong;

use crate::failure::{Failure, JResult};

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}


pub(crate) struct Handles<T> {
    next: AtomicI64,
    map: Mutex<HashMap<jlong, Arc<Mutex<Option<T>>>>>,
}

impl<T> Default for Handles<T> {
    fn default() -> Self {
        Handles { next: AtomicI64::new(1), map: Mutex::new(HashMap::new()) }
    }
}

impl<T> Handles<T> {
    pub fn insert(&self, v: T) -> jlong {
        let h = self.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.map).insert(h, Arc::new(Mutex::new(Some(v))));
        h
    }

    pub fn with<R>(&self, h: jlong, f: impl FnOnce(&mut T) -> JResult<R>) -> JResult<R> {
        let slot = lock(&self.map).get(&h).cloned().ok_or(Failure::Closed(h))?;
        let mut guard = lock(&slot);
        f(guard.as_mut().ok_or(Failure::Closed(h))?)
    }

    /// Removes the handle; waits for a call in progress on it to finish.
    pub fn take(&self, h: jlong) -> JResult<T> {
        let slot = lock(&self.map).remove(&h).ok_or(Failure::Closed(h))?;
        let taken = lock(&slot).take();
        taken.ok_or(Failure::Closed(h))
    }

    pub fn clear(&self) -> Vec<T> {
        let slots: Vec<_> = lock(&self.map).drain().map(|(_, s)| s).collect();
        slots.into_iter().filter_map(|s| lock(&s).take()).collect()
    }
}

