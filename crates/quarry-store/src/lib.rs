//! The I/O layer of quarry: where index bytes come from and how they reach disk durably.
//!
//! A [`Directory`] is a flat folder of immutable files. Readers ask it for a [`FileHandle`] and
//! then for [`Bytes`] ranges: with [`MmapDirectory`] a range is a zero-copy view of the mapping
//! (no syscall), with [`PreadDirectory`] it is one positioned read into a fresh buffer. Writers
//! create files through it, fsync them, and publish them with an atomic rename plus a directory
//! fsync. Nothing here knows about documents or queries.

mod bytes;
mod directory;
mod error;
#[cfg(feature = "testing")]
mod faulty;
mod lock;
mod mmap;
mod pread;

#[cfg(test)]
mod contract_tests;

pub use bytes::Bytes;
pub use directory::{
    open_directory, Directory, DirectoryKind, FileHandle, FileWriter, FsDirectory,
};
pub use error::{Result, StoreError};
#[cfg(feature = "testing")]
pub use faulty::FaultyDirectory;
pub use lock::FileLock;
pub use mmap::MmapDirectory;
pub use pread::PreadDirectory;
