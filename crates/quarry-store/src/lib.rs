//! The I/O layer of quarry: where index bytes come from and how they reach disk durably.
//!
//! A [`Directory`] is a flat folder of immutable files. Readers ask it for a [`FileHandle`] and
//! then for [`Bytes`] ranges: with [`MmapDirectory`] a range is a zero-copy view of the mapping
//! (no syscall), with [`PreadDirectory`] it is one positioned read into a fresh buffer, with
//! [`DirectDirectory`] it comes from a [`BufferPool`] filled by `O_DIRECT` reads, and
//! [`AdaptiveDirectory`] picks one of these per file. Many ranges known at once are read with
//! [`FileHandle::read_many`] (io_uring, see [`BatchMode`]). Writers create files through it,
//! fsync them, and publish them with an atomic rename plus a directory fsync. Nothing here knows
//! about documents or queries.

mod adaptive;
mod batch;
mod bytes;
mod direct;
mod directory;
mod error;
#[cfg(feature = "testing")]
mod faulty;
mod lock;
pub mod memory;
mod mmap;
mod pool;
mod pread;

#[cfg(test)]
mod contract_tests;

mod sched;
pub use adaptive::{choose, AdaptiveDirectory, AdaptiveOptions, Choice, FileKind};
pub use batch::{uring_available, BatchMode};
pub use bytes::Bytes;
pub use direct::{DirectDirectory, DirectFile, DirectOptions, DEFAULT_PAGE_SIZE};
pub use directory::{
    open_directory, Directory, DirectoryKind, FileHandle, FileWriter, FsDirectory, LoadCheck,
};
pub use error::{Result, StoreError};
#[cfg(feature = "testing")]
pub use faulty::FaultyDirectory;
pub use lock::FileLock;
pub use mmap::{map_for_sequential_read, MmapDirectory};
pub use pool::{AlignedBuf, BufferPool, PoolStats};
pub use pread::PreadDirectory;
pub use sched::lower_current_thread_priority;
