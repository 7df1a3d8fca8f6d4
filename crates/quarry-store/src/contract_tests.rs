//! One contract test suite, run against every [`Directory`] implementation.
use std::io::Write;
use std::sync::Arc;

use std::path::Path;

use crate::{
    AdaptiveDirectory, AdaptiveOptions, BatchMode, DirectDirectory, DirectOptions, Directory,
    MmapDirectory, PreadDirectory, StoreError,
};

fn write(dir: &dyn Directory, name: &str, bytes: &[u8]) {
    let mut w = dir.create(name).unwrap();
    w.write_all(bytes).unwrap();
    assert_eq!(w.finish().unwrap(), bytes.len() as u64);
}

fn reads_what_was_written(dir: &dyn Directory) {
    let data: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
    write(dir, "a.bin", &data);
    let h = dir.open("a.bin").unwrap();
    assert_eq!(h.len(), data.len() as u64);
    assert_eq!(h.name(), "a.bin");
    assert_eq!(&*h.read_all().unwrap(), &data[..]);
    if let Some(view) = h.mapped_view() {
        assert_eq!(&*view, &data[..]);
    }
    assert_eq!(&*h.read_bytes(10, 20).unwrap(), &data[10..20]);
    assert_eq!(h.read_bytes(5, 5).unwrap().len(), 0);
    let end = data.len() as u64;
    assert!(matches!(
        h.read_bytes(end - 1, end + 1),
        Err(StoreError::OutOfBounds { .. })
    ));
    #[allow(clippy::reversed_empty_ranges)]
    let backwards = h.read_bytes(8, 4);
    assert!(backwards.is_err());
}

fn empty_file(dir: &dyn Directory) {
    write(dir, "empty", b"");
    let h = dir.open("empty").unwrap();
    assert_eq!(h.len(), 0);
    assert!(h.read_all().unwrap().is_empty());
}

fn missing_and_bad_names(dir: &dyn Directory) {
    assert!(matches!(dir.open("nope"), Err(StoreError::NotFound { .. })));
    assert!(matches!(
        dir.open("../etc/passwd"),
        Err(StoreError::BadName { .. })
    ));
    assert!(dir.create("a/b").is_err());
    assert!(!dir.exists("nope"));
}

fn atomic_write_rename_delete_list(dir: &dyn Directory) {
    dir.atomic_write("commit", b"one").unwrap();
    assert_eq!(&*dir.open("commit").unwrap().read_all().unwrap(), b"one");
    let old = dir.open("commit").unwrap();
    dir.atomic_write("commit", b"two!").unwrap();
    // A handle opened before the replacement keeps seeing the old file.
    assert_eq!(&*old.read_all().unwrap(), b"one");
    assert_eq!(&*dir.open("commit").unwrap().read_all().unwrap(), b"two!");
    assert!(!dir.exists("commit.tmp"));
    write(dir, "x", b"x");
    dir.rename("x", "y").unwrap();
    assert!(!dir.exists("x") && dir.exists("y"));
    let names = dir.list().unwrap();
    assert!(names.contains(&"y".to_string()) && names.contains(&"commit".to_string()));
    dir.delete("y").unwrap();
    assert!(!dir.exists("y"));
    assert!(dir.delete("y").is_err());
    dir.sync_dir().unwrap();
}

fn shared_across_threads(dir: Arc<dyn Directory>) {
    write(&*dir, "t", &[42u8; 4096]);
    let h = dir.open("t").unwrap();
    std::thread::scope(|s| {
        for i in 0..4u64 {
            let h = h.clone();
            s.spawn(move || assert_eq!(h.read_bytes(i * 100, i * 100 + 10).unwrap()[0], 42));
        }
    });
    h.evict_from_cache().unwrap();
    assert_eq!(h.read_bytes(0, 1).unwrap()[0], 42);
}

fn many_ranges(dir: &dyn Directory) {
    let data: Vec<u8> = (0..200_000u32).map(|i| (i * 13 % 241) as u8).collect();
    write(dir, "m", &data);
    let h = dir.open("m").unwrap();
    let ranges: Vec<_> = (0..100u64)
        .map(|i| {
            let s = i * 1913 % 190_000;
            s..s + i * 97 % 7000
        })
        .collect();
    let got = h.read_many(&ranges).unwrap();
    assert_eq!(got.len(), ranges.len());
    for (r, b) in ranges.iter().zip(&got) {
        assert_eq!(&**b, &data[r.start as usize..r.end as usize]);
    }
    assert!(h.read_many(&[]).unwrap().is_empty());
    let len = data.len() as u64;
    assert!(matches!(
        h.read_many(&[0..10, len..len + 1]),
        Err(StoreError::OutOfBounds { .. })
    ));
}

/// Direct reads with a pool of 16 small pages, so that the contract runs through eviction and
/// reads larger than the pool.
fn tiny_direct(p: &Path) -> crate::Result<DirectDirectory> {
    DirectDirectory::open_with(
        p,
        DirectOptions {
            page_size: 4096,
            memory_limit: Some(16 * 4096),
            ..Default::default()
        },
    )
}

/// Adaptive, told it has so little memory that nothing fits (stored fields pread, the rest
/// mapped).
fn starved_adaptive(p: &Path) -> crate::Result<AdaptiveDirectory> {
    AdaptiveDirectory::open_with(
        p,
        AdaptiveOptions {
            available_memory: Some(1),
            direct: DirectOptions {
                page_size: 4096,
                memory_limit: Some(16 * 4096),
                ..Default::default()
            },
        },
    )
}

macro_rules! contract {
    ($modname:ident, $ctor:expr) => {
        mod $modname {
            use super::*;
            fn dir() -> (tempfile::TempDir, Arc<dyn Directory>) {
                let t = tempfile::tempdir().unwrap();
                let d: Arc<dyn Directory> = Arc::new($ctor(t.path()).unwrap());
                (t, d)
            }
            #[test]
            fn reads() {
                let (_t, d) = dir();
                reads_what_was_written(&*d);
            }
            #[test]
            fn empty() {
                let (_t, d) = dir();
                empty_file(&*d);
            }
            #[test]
            fn names() {
                let (_t, d) = dir();
                missing_and_bad_names(&*d);
            }
            #[test]
            fn atomic() {
                let (_t, d) = dir();
                atomic_write_rename_delete_list(&*d);
            }
            #[test]
            fn many() {
                let (_t, d) = dir();
                many_ranges(&*d);
            }
            #[test]
            fn threads() {
                let (_t, d) = dir();
                shared_across_threads(d);
            }
        }
    };
}

contract!(mmap, MmapDirectory::open);
contract!(pread, PreadDirectory::open);
contract!(pread_uring, |p| PreadDirectory::open_with(
    p,
    BatchMode::Auto
));
contract!(pread_no_uring, |p| PreadDirectory::open_with(
    p,
    BatchMode::Pread
));
contract!(direct, DirectDirectory::open);
contract!(direct_tiny_pool, tiny_direct);
contract!(direct_pinned, |p| DirectDirectory::open_with(
    p,
    DirectOptions {
        copy_out: false,
        ..Default::default()
    }
));
contract!(direct_buffered, |p| DirectDirectory::open_with(
    p,
    DirectOptions {
        buffered_only: true,
        batch: BatchMode::Pread,
        ..Default::default()
    }
));
contract!(adaptive, AdaptiveDirectory::open);
contract!(adaptive_starved, starved_adaptive);
