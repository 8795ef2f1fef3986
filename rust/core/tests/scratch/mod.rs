//! A directory of its own for each test that writes files, removed when the guard drops: the
//! generated captures run to hundreds of MB, and repeated runs must not fill the temp dir. Drop
//! also runs while a failing test unwinds, so a failure leaves nothing behind either.
//!
//! Shared by the integration tests and, through `#[path]`, by the unit tests in `src`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Tests of one binary run on parallel threads: the process id alone would give two of them
/// the same directory, and the first to finish would delete the other's files.
static NEXT: AtomicUsize = AtomicUsize::new(0);

pub struct Scratch(PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("burstcore-{name}-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Scratch(dir)
    }

    #[allow(dead_code)]
    pub fn path(&self) -> &Path {
        &self.0
    }

    #[allow(dead_code)]
    pub fn join(&self, p: impl AsRef<Path>) -> PathBuf {
        self.0.join(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
