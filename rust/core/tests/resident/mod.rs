//! How much of a file this process holds mapped, and the file cached afresh, for tests of the
//! pages a mapped reader leaves resident (Linux).
//!
//! Shared by the integration tests and, through `#[path]`, by the unit tests in `src`.

use std::path::Path;

/// Kibibytes of `path` resident in this process's mappings of it (Linux smaps).
pub fn resident_kib(path: &Path) -> u64 {
    let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
    let name = path.to_str().expect("utf-8 path");
    let mut ours = false;
    let mut kib = 0;
    for line in smaps.lines() {
        // A mapping's first line starts with its address range; its fields follow.
        if line
            .split_whitespace()
            .next()
            .is_some_and(|f| f.contains('-'))
        {
            ours = line.ends_with(name);
        } else if let Some(rss) = line.strip_prefix("Rss:").filter(|_| ours) {
            kib += rss
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .expect("Rss");
        }
    }
    kib
}

/// Drop `path` from the page cache and read it back, as a capture read before is cached: in
/// large folios, which the kernel may map in 2 MiB entries (pages just written are not).
pub fn cache_afresh(path: &Path) {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path).expect("open");
    f.sync_all().expect("sync");
    // SAFETY: advice on an open descriptor; the result is ignored (the tests hold either way).
    unsafe {
        libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
    }
    std::io::copy(&mut std::io::BufReader::new(f), &mut std::io::sink()).expect("read");
}
