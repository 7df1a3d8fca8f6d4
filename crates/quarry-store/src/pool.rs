//! Which file pages are in memory for direct I/O: a fixed arena of aligned pages with pin counts,
//! CLOCK eviction and hit / miss / eviction counters.
//!
//! The arena is allocated once (`memory_limit / page_size` frames, each `page_size` bytes and
//! aligned to at least 4096, so every frame is a valid `O_DIRECT` buffer). A page is identified by
//! a [`PageKey`] (a per-handle file id that is never reused, and the page number). Looking a page
//! up pins it; the pin is released when the [`PinnedPage`] is dropped. Eviction (CLOCK: a hand
//! sweeps the frames, clearing reference bits, and takes the first unpinned, unreferenced one)
//! never takes a pinned frame; when every frame is pinned, the lookup says so and the caller reads
//! around the pool instead of waiting.
//!
//! Loading happens outside the pool's lock: the frame is reserved in a `Loading` state (pinned by
//! the loader), filled, then published; other threads asking for the same page wait for it.
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// The alignment of every frame and of [`AlignedBuf`]s: the strictest `O_DIRECT` memory
/// alignment we accept (file systems report 512 or 4096 through `STATX_DIOALIGN`).
pub const MEM_ALIGN: usize = 4096;

/// A page of a file: (file id, page number).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PageKey {
    pub file: u64,
    pub page: u64,
}

/// Counters of a [`BufferPool`] since it was created.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Page lookups answered from memory.
    pub hits: u64,
    /// Page lookups that read the page from the file.
    pub misses: u64,
    /// Pages dropped to make room for others.
    pub evictions: u64,
    /// Reads served around the pool (large reads, or every frame pinned).
    pub bypass_reads: u64,
    /// Frames in the arena.
    pub frames: usize,
    /// Bytes per frame.
    pub page_size: usize,
}

/// A heap buffer aligned to `MEM_ALIGN` (4096), zero-initialised; immutable once shared.
pub struct AlignedBuf {
    ptr: *mut u8,
    layout: Layout,
    len: usize,
}

// SAFETY: AlignedBuf owns its allocation exclusively; shared access only reads it.
unsafe impl Send for AlignedBuf {}
// SAFETY: as above; mutation needs `&mut self`.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// A zeroed buffer of `len` bytes (at least one byte is allocated).
    pub fn zeroed(len: usize) -> Self {
        let size = len.max(1).next_multiple_of(MEM_ALIGN);
        let layout = Layout::from_size_align(size, MEM_ALIGN).expect("valid aligned layout");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        Self { ptr, layout, len }
    }
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: ptr is a live allocation of at least `len` initialised (zeroed) bytes that
        // `&mut self` gives us exclusive access to.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
    /// Shortens the visible length (after a short read at the end of a file).
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }
}

impl AsRef<[u8]> for AlignedBuf {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: ptr is a live allocation of at least `len` initialised bytes.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: ptr was allocated with exactly this layout and is freed once.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Free,
    Loading,
    /// Holds this many valid bytes (less than a page only at the end of a file).
    Ready(usize),
}

struct Inner {
    map: HashMap<PageKey, usize>,
    keys: Vec<Option<PageKey>>,
    state: Vec<State>,
    free: Vec<usize>,
    hand: usize,
}

/// A fixed set of aligned page frames shared by the files of a direct directory.
pub struct BufferPool {
    page_size: usize,
    frames: usize,
    /// Anonymous mapping: zero pages cost nothing until a frame is first filled (a heap
    /// allocation with this alignment would be zeroed eagerly: 2.4 s and 1 GiB RSS at open).
    _arena_map: memmap2::MmapMut,
    arena: *mut u8,
    pins: Box<[AtomicU32]>,
    referenced: Box<[AtomicBool]>,
    inner: Mutex<Inner>,
    loaded: Condvar,
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: AtomicU64,
    bypass: AtomicU64,
}

// SAFETY: `arena` points into `_arena_map`, owned by the pool and alive as long as it; frames are
// written only by the thread that holds them in the Loading state (see `get`), read only while
// pinned, so sharing the pool between threads is sound.
unsafe impl Send for BufferPool {}
// SAFETY: as above.
unsafe impl Sync for BufferPool {}

impl std::fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BufferPool({:?})", self.stats())
    }
}

/// What a lookup found.
pub enum Lookup {
    /// The page, pinned until the guard is dropped.
    Page(PinnedPage),
    /// Every frame is pinned: read around the pool.
    Full,
}

impl BufferPool {
    /// A pool of `memory_limit / page_size` frames (at least one). `page_size` must be a power of
    /// two of at least `MEM_ALIGN` (4096) bytes (checked by the directory options).
    pub fn new(page_size: usize, memory_limit: usize) -> Self {
        assert!(page_size.is_power_of_two() && page_size >= MEM_ALIGN);
        let frames = (memory_limit / page_size).max(1);
        let mut map = memmap2::MmapMut::map_anon(frames * page_size).unwrap_or_else(|e| {
            panic!(
                "cannot reserve {} bytes for the buffer pool: {e}",
                frames * page_size
            )
        });
        let arena = map.as_mut_ptr();
        Self {
            page_size,
            frames,
            _arena_map: map,
            arena,
            pins: (0..frames).map(|_| AtomicU32::new(0)).collect(),
            referenced: (0..frames).map(|_| AtomicBool::new(false)).collect(),
            inner: Mutex::new(Inner {
                map: HashMap::with_capacity(frames),
                keys: vec![None; frames],
                state: vec![State::Free; frames],
                free: (0..frames).rev().collect(),
                hand: 0,
            }),
            loaded: Condvar::new(),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            bypass: AtomicU64::new(0),
        }
    }

    pub fn page_size(&self) -> usize {
        self.page_size
    }
    pub fn frames(&self) -> usize {
        self.frames
    }

    pub fn stats(&self) -> PoolStats {
        PoolStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            bypass_reads: self.bypass.load(Ordering::Relaxed),
            frames: self.frames,
            page_size: self.page_size,
        }
    }

    pub(crate) fn count_bypass(&self) {
        self.bypass.fetch_add(1, Ordering::Relaxed);
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave the maps inconsistent (every update is a
        // few infallible assignments), so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Frames currently pinned (for tests and statistics).
    pub fn pinned_frames(&self) -> usize {
        self.pins
            .iter()
            .filter(|p| p.load(Ordering::Acquire) > 0)
            .count()
    }

    /// The page `key`, loading it with `load` (which fills the frame and returns how many bytes
    /// are valid) on a miss. A failed load leaves no trace in the pool.
    pub fn get<E>(
        self: &Arc<Self>,
        key: PageKey,
        load: impl FnOnce(&mut [u8]) -> Result<usize, E>,
    ) -> Result<Lookup, E> {
        let mut inner = self.lock();
        let frame = loop {
            match inner.map.get(&key) {
                Some(&f) => match inner.state[f] {
                    State::Ready(len) => {
                        self.pins[f].fetch_add(1, Ordering::AcqRel);
                        self.referenced[f].store(true, Ordering::Relaxed);
                        self.hits.fetch_add(1, Ordering::Relaxed);
                        return Ok(Lookup::Page(self.guard(f, len)));
                    }
                    State::Loading => {
                        inner = self.loaded.wait(inner).unwrap_or_else(|p| p.into_inner());
                    }
                    State::Free => unreachable!("mapped frames are never free"),
                },
                None => match self.take_frame(&mut inner) {
                    Some(f) => break f,
                    None => return Ok(Lookup::Full),
                },
            }
        };
        self.misses.fetch_add(1, Ordering::Relaxed);
        inner.keys[frame] = Some(key);
        inner.state[frame] = State::Loading;
        inner.map.insert(key, frame);
        self.pins[frame].store(1, Ordering::Release);
        drop(inner);

        // SAFETY: `frame` is in the Loading state and pinned by us: no other thread reads or
        // writes its bytes until we publish it below, and the arena outlives `self`.
        let buf = unsafe { self.frame_mut(frame) };
        let result = load(buf);
        let mut inner = self.lock();
        let out = match result {
            Ok(len) => {
                let len = len.min(self.page_size);
                inner.state[frame] = State::Ready(len);
                self.referenced[frame].store(true, Ordering::Relaxed);
                Ok(Lookup::Page(self.guard(frame, len)))
            }
            Err(e) => {
                inner.map.remove(&key);
                inner.keys[frame] = None;
                inner.state[frame] = State::Free;
                inner.free.push(frame);
                self.pins[frame].store(0, Ordering::Release);
                Err(e)
            }
        };
        drop(inner);
        self.loaded.notify_all();
        out
    }

    /// A free frame, or the CLOCK victim (unmapped); `None` when every frame is pinned or loading.
    fn take_frame(&self, inner: &mut Inner) -> Option<usize> {
        if let Some(f) = inner.free.pop() {
            return Some(f);
        }
        // Two sweeps: the first may only clear reference bits.
        for _ in 0..2 * self.frames {
            let f = inner.hand;
            inner.hand = (inner.hand + 1) % self.frames;
            if !matches!(inner.state[f], State::Ready(_))
                || self.pins[f].load(Ordering::Acquire) > 0
            {
                continue;
            }
            if self.referenced[f].swap(false, Ordering::Relaxed) {
                continue;
            }
            if let Some(old) = inner.keys[f].take() {
                inner.map.remove(&old);
            }
            inner.state[f] = State::Free;
            self.evictions.fetch_add(1, Ordering::Relaxed);
            return Some(f);
        }
        None
    }

    /// Drops every unpinned page of `file` (the handle is gone or its cache is evicted). Pinned
    /// pages stay until their pins go; file ids are never reused, so they cannot be found again.
    pub fn forget_file(&self, file: u64) {
        let mut inner = self.lock();
        for f in 0..self.frames {
            if inner.keys[f].is_some_and(|k| k.file == file)
                && matches!(inner.state[f], State::Ready(_))
                && self.pins[f].load(Ordering::Acquire) == 0
            {
                let key = inner.keys[f].take().expect("checked");
                inner.map.remove(&key);
                inner.state[f] = State::Free;
                inner.free.push(f);
            }
        }
    }

    fn guard(self: &Arc<Self>, frame: usize, len: usize) -> PinnedPage {
        PinnedPage {
            pool: self.clone(),
            frame,
            len,
        }
    }

    /// # Safety
    /// The caller must have exclusive use of `frame` (Loading state, pinned by the caller).
    #[allow(clippy::mut_from_ref)]
    unsafe fn frame_mut(&self, frame: usize) -> &mut [u8] {
        // SAFETY: frame < frames, so the range lies inside the arena; exclusivity is the
        // caller's promise.
        unsafe {
            std::slice::from_raw_parts_mut(self.arena.add(frame * self.page_size), self.page_size)
        }
    }
}

/// A page held in memory: the frame cannot be evicted or reused while this exists.
pub struct PinnedPage {
    pool: Arc<BufferPool>,
    frame: usize,
    len: usize,
}

impl PinnedPage {
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl AsRef<[u8]> for PinnedPage {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: the frame is Ready and pinned by this guard, so nobody writes it until the
        // guard is dropped; `len <= page_size` and the frame lies inside the arena, which the
        // Arc keeps alive.
        unsafe {
            std::slice::from_raw_parts(
                self.pool.arena.add(self.frame * self.pool.page_size),
                self.len,
            )
        }
    }
}

impl Drop for PinnedPage {
    fn drop(&mut self) {
        self.pool.pins[self.frame].fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fill(tag: u8) -> impl FnOnce(&mut [u8]) -> Result<usize, ()> {
        move |b: &mut [u8]| {
            b.fill(tag);
            Ok(b.len())
        }
    }

    fn page(l: Lookup) -> PinnedPage {
        match l {
            Lookup::Page(p) => p,
            Lookup::Full => panic!("pool unexpectedly full"),
        }
    }

    #[test]
    fn hits_misses_and_clock_eviction() {
        let pool = Arc::new(BufferPool::new(4096, 2 * 4096));
        let k = |p| PageKey { file: 1, page: p };
        drop(page(pool.get(k(0), fill(0)).unwrap()));
        drop(page(pool.get(k(1), fill(1)).unwrap()));
        let p0 = page(pool.get(k(0), fill(9)).unwrap());
        assert_eq!(p0.as_ref()[0], 0, "a hit must not reload");
        drop(p0);
        // Both frames are referenced; the third page evicts one of them.
        drop(page(pool.get(k(2), fill(2)).unwrap()));
        let s = pool.stats();
        assert_eq!((s.hits, s.misses, s.evictions), (1, 3, 1));
        assert_eq!(pool.pinned_frames(), 0);
    }

    #[test]
    fn pinned_pages_are_never_evicted() {
        let pool = Arc::new(BufferPool::new(4096, 2 * 4096));
        let k = |p| PageKey { file: 7, page: p };
        let a = page(pool.get(k(0), fill(10)).unwrap());
        let b = page(pool.get(k(1), fill(11)).unwrap());
        assert!(matches!(pool.get(k(2), fill(12)).unwrap(), Lookup::Full));
        assert_eq!(a.as_ref()[4095], 10);
        assert_eq!(b.as_ref()[0], 11);
        drop(b);
        let c = page(pool.get(k(2), fill(12)).unwrap());
        assert_eq!(c.as_ref()[0], 12);
        assert_eq!(a.as_ref()[0], 10, "the pinned page kept its bytes");
        assert_eq!(pool.stats().evictions, 1);
    }

    #[test]
    fn failed_loads_leave_no_trace_and_forget_frees() {
        let pool = Arc::new(BufferPool::new(4096, 4096));
        let key = PageKey { file: 3, page: 0 };
        assert!(pool.get(key, |_| Err::<usize, _>("boom")).is_err());
        let p = page(pool.get(key, fill(5)).unwrap());
        assert_eq!(p.as_ref()[0], 5);
        drop(p);
        pool.forget_file(3);
        let p = page(pool.get(key, fill(6)).unwrap());
        assert_eq!(p.as_ref()[0], 6, "forgotten pages are reloaded");
    }

    #[test]
    fn concurrent_lookups_see_consistent_pages() {
        let pool = Arc::new(BufferPool::new(4096, 8 * 4096));
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let pool = pool.clone();
                s.spawn(move || {
                    for i in 0..2000u64 {
                        let p = (i * 7 + t) % 24;
                        let key = PageKey { file: 1, page: p };
                        let g = page(pool.get(key, fill(p as u8)).unwrap());
                        assert!(g.as_ref().iter().all(|&b| b == p as u8));
                    }
                });
            }
        });
        let s = pool.stats();
        assert_eq!(s.hits + s.misses, 8000);
        assert_eq!(pool.pinned_frames(), 0);
    }
}
