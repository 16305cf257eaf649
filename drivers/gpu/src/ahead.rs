//! Translation ahead of the draw (docs/PACKS.md, "Translation ahead of the draw"): at
//! `sceAgcCreateShader` the program's translation for the state its header predicts
//! (`aps5_agc::shader::translation_state`, the build's static prediction) starts on a worker
//! thread, so it overlaps the program's own CPU work between creating the shader and
//! drawing with it. A draw or dispatch whose pack key (code, state, device class) is one of
//! these finds it ready, or waits for the one in flight; one still queued is taken back and
//! translated by the submit thread itself (it would otherwise wait for the queue). Each key
//! is translated at most once. The workers only translate (pure CPU work, no Vulkan): the
//! module, the pipeline and the play record are made on the submit thread as for any miss.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use aps5_shader::pack::{self as spack, PackedShader, ShaderState};
use aps5_shader::translate::Options;

/// A key's translation.
enum Slot {
    /// Queued, no worker has started it.
    Queued,
    /// A worker is translating it.
    Running,
    /// Done (not yet taken by a draw).
    Done(Box<Result<PackedShader, String>>),
    /// Taken by a draw or dispatch (or taken back from the queue by one): never again.
    Taken,
}

struct Job {
    key: [u8; 32],
    code: Vec<u8>,
    state: ShaderState,
    opts: Options,
}

#[derive(Default)]
struct Inner {
    slots: HashMap<[u8; 32], Slot>,
    queue: VecDeque<Job>,
    /// Workers started so far, and idle ones waiting for a job.
    workers: usize,
    idle: usize,
    closing: bool,
}

#[derive(Default)]
struct Shared {
    inner: Mutex<Inner>,
    /// Signalled when a job is queued (workers) and when a translation is done (draws).
    changed: Condvar,
    /// Translations the workers finished.
    done: AtomicU64,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What [`Ahead::take`] found for a key.
pub(crate) enum Taken {
    /// Not translated ahead (or already taken): the caller translates.
    No,
    /// The worker's translation, and how long the caller waited for it (None: it was
    /// made already).
    Ready(Box<Result<PackedShader, String>>, Option<Duration>),
}

/// What [`Ahead::peek`] found for a key.
pub(crate) enum Peek {
    InFlight,
    NotAhead,
}

/// The workers and their translations, by pack key.
pub(crate) struct Ahead {
    shared: Arc<Shared>,
    max_workers: usize,
}

/// Workers: one core is left to the program (whose CPU work the translations overlap),
/// at most 4.
fn default_workers() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get().saturating_sub(1))
        .clamp(1, 4)
}

impl Default for Ahead {
    fn default() -> Ahead {
        Ahead {
            shared: Arc::default(),
            max_workers: default_workers(),
        }
    }
}

impl Ahead {
    /// Starts translating `code` for `state` under `key` (its pack key with `opts`): false
    /// when the key is known already (a second identical create translates nothing).
    pub(crate) fn start(
        &self,
        key: [u8; 32],
        code: Vec<u8>,
        state: ShaderState,
        opts: &Options,
    ) -> bool {
        let mut g = self.shared.lock();
        if g.closing || g.slots.contains_key(&key) {
            return false;
        }
        g.slots.insert(key, Slot::Queued);
        g.queue.push_back(Job {
            key,
            code,
            state,
            opts: opts.clone(),
        });
        if g.idle == 0 && g.workers < self.max_workers {
            let shared = self.shared.clone();
            let n = g.workers;
            let spawned = std::thread::Builder::new()
                .name(format!("gpu translate {n}"))
                .spawn(move || work(&shared));
            // No thread: the job stays queued and the draw takes it back.
            if spawned.is_ok() {
                g.workers += 1;
            }
        } else {
            self.shared.changed.notify_all();
        }
        true
    }

    /// Whether a worker has made or is making `key`'s translation ([`Peek::InFlight`]: then
    /// [`Ahead::take`] it); one still queued is taken back ([`Peek::NotAhead`], as for a key
    /// never started: the caller translates it).
    pub(crate) fn peek(&self, key: &[u8; 32]) -> Peek {
        let mut g = self.shared.lock();
        match g.slots.get_mut(key) {
            Some(Slot::Running | Slot::Done(_)) => Peek::InFlight,
            Some(s @ Slot::Queued) => {
                *s = Slot::Taken;
                Peek::NotAhead
            }
            None | Some(Slot::Taken) => Peek::NotAhead,
        }
    }

    /// The translation made ahead for `key`, waiting for it while a worker is making it; a
    /// queued one is taken back ([`Taken::No`]: the caller translates it now).
    pub(crate) fn take(&self, key: &[u8; 32]) -> Taken {
        let mut g = self.shared.lock();
        let started = Instant::now();
        let mut waited = false;
        loop {
            match g.slots.get_mut(key) {
                None | Some(Slot::Taken) => return Taken::No,
                Some(s @ Slot::Queued) => {
                    *s = Slot::Taken;
                    return Taken::No;
                }
                Some(Slot::Running) => {
                    waited = true;
                    g = self
                        .shared
                        .changed
                        .wait(g)
                        .unwrap_or_else(|e| e.into_inner());
                }
                Some(s @ Slot::Done(_)) => {
                    let Slot::Done(r) = std::mem::replace(s, Slot::Taken) else {
                        unreachable!("matched Done")
                    };
                    return Taken::Ready(r, waited.then(|| started.elapsed()));
                }
            }
        }
    }

    /// Translations the workers finished.
    pub(crate) fn finished(&self) -> u64 {
        self.shared.done.load(Ordering::SeqCst)
    }

    /// No job is started from now on (a worker finishes the one it is on).
    pub(crate) fn close(&self) {
        let mut g = self.shared.lock();
        g.closing = true;
        g.queue.clear();
        self.shared.changed.notify_all();
    }

    /// Waits until no job is queued or running (tests).
    pub(crate) fn wait_idle(&self) {
        let mut g = self.shared.lock();
        while !g.queue.is_empty() || g.slots.values().any(|s| matches!(s, Slot::Running)) {
            g = self
                .shared
                .changed
                .wait(g)
                .unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl Drop for Ahead {
    fn drop(&mut self) {
        self.close();
    }
}

/// A worker: takes queued jobs until the service closes.
fn work(shared: &Shared) {
    let mut g = shared.lock();
    loop {
        if g.closing {
            return;
        }
        let Some(job) = g.queue.pop_front() else {
            g.idle += 1;
            g = shared.changed.wait(g).unwrap_or_else(|e| e.into_inner());
            g.idle -= 1;
            continue;
        };
        // Taken back by a draw meanwhile: nothing to do.
        match g.slots.get_mut(&job.key) {
            Some(s @ Slot::Queued) => *s = Slot::Running,
            _ => continue,
        }
        drop(g);
        let r = translate(&job.code, &job.state, &job.opts);
        shared.done.fetch_add(1, Ordering::SeqCst);
        g = shared.lock();
        g.slots.insert(job.key, Slot::Done(Box::new(r)));
        shared.changed.notify_all();
    }
}

/// The translation the submit thread would make (a translator panic is an error here, so
/// the draw that needs it reports it).
pub(crate) fn translate(
    code: &[u8],
    state: &ShaderState,
    opts: &Options,
) -> Result<PackedShader, String> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        spack::translate(code, state, opts)
    })) {
        Ok(Ok(t)) => Ok(PackedShader::of(&t)),
        Ok(Err(e)) => Err(format!("cannot translate: {e}")),
        Err(p) => Err(format!(
            "cannot translate: the translator panicked ({})",
            p.downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| p.downcast_ref::<&str>().copied())
                .unwrap_or("no message")
        )),
    }
}
