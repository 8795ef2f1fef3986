//! Transparent huge pages behind large buffers that are written once from start to end (the
//! columns of `read_packets`): one page fault and one zeroing per 2 MiB instead of per 4 KiB.
//!
//! Fresh anonymous memory costs the kernel a fault, a zeroed page and its bookkeeping per page
//! touched. For `read_packets` on the benchmark captures that was about a fifth of the time;
//! with huge pages, `table_bench` (all columns, alternated runs) went from 0.213–0.216 to
//! 0.182–0.185 s on the 2 GB full-frame pcapng and from 1.21–1.26 to 0.96–1.02 s on the 2 GB
//! snaplen-128 pcap. Where the kernel runs THP in `madvise` mode (as on the benchmark machine)
//! the advice is what turns them on; with `always` it changes nothing, with `never` the kernel
//! ignores it, and elsewhere than Linux it is not given. Only whole 2 MiB stretches inside the
//! buffer are advised, so nothing outside it changes, and pages never touched are never
//! allocated: a buffer reserved larger than it is filled costs at most one partly used huge
//! page more.
//!
//! Not in a VM whose host takes free memory back (free page reporting, [`wanted`]): there a huge
//! page's first touch costs the host's fault for 2 MiB, and a one-thread `read_packets` of the
//! 2 GB snaplen-128 pcap took 2.72–3.26 s with huge pages against 1.85–2.09 s without (fresh
//! processes, alternated, on the Intel benchmark VM of the twenty-first landing).

/// The huge page size of x86-64 and of arm64 with 4 KiB base pages.
pub(crate) const HUGE: usize = 2 << 20;

/// Make room for `n` more elements where the memory is there (a hint: otherwise `v` grows as
/// it fills), asking for huge pages behind it: for buffers then filled from start to end.
pub(crate) fn reserve<T>(v: &mut Vec<T>, n: usize) {
    let _ = v.try_reserve_exact(n);
    advise(v);
}

/// Ask for huge pages behind `v`'s whole capacity (filled or not), where they pay
/// ([`wanted`]). Advice only: the contents do not change, and a refusal changes nothing.
pub(crate) fn advise<T>(v: &Vec<T>) {
    if wanted() {
        advise_anyway(v);
    }
}

/// Whether huge pages are asked for here: not off Linux (the advice is Linux's), and not when
/// the kernel hands free memory back to a VM's host. A virtio balloon with free page reporting
/// does that for every free block from 2 MiB up (the order the benchmark VM's kernel reports),
/// seconds after it is freed; the next huge page there then costs a fault on the host too. On
/// that VM, touching 2 GiB of memory freed ten seconds before took 7.1–8.1 s in huge pages and
/// 1.3 s in 4 KiB ones; reused at once, 0.6 s.
pub(crate) fn wanted() -> bool {
    #[cfg(target_os = "linux")]
    {
        static WANTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *WANTED.get_or_init(|| {
            !balloon_reports_free_pages(std::path::Path::new(
                "/sys/bus/virtio/drivers/virtio_balloon",
            ))
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// Whether a device bound to the virtio balloon driver at `driver` (a sysfs directory) has
/// negotiated free page reporting. Each bound device is a `virtioN` entry there, whose
/// `features` file lists the negotiated feature bits as `0`/`1`, bit 0 first.
#[cfg(target_os = "linux")]
fn balloon_reports_free_pages(driver: &std::path::Path) -> bool {
    /// VIRTIO_BALLOON_F_REPORTING (virtio 1.2, 5.5.3).
    const REPORTING: usize = 5;
    let Ok(entries) = std::fs::read_dir(driver) else {
        return false;
    };
    entries.flatten().any(|entry| {
        entry.file_name().to_string_lossy().starts_with("virtio")
            && std::fs::read(entry.path().join("features"))
                .is_ok_and(|bits| bits.get(REPORTING) == Some(&b'1'))
    })
}

/// [`advise`] whatever [`wanted`] says.
fn advise_anyway<T>(v: &Vec<T>) {
    let start = v.as_ptr() as usize;
    let len = v.capacity().saturating_mul(std::mem::size_of::<T>());
    if let Some((from, to)) = whole_units(start, 0, len, HUGE) {
        advise_range(start + from, to - from);
    }
}

/// The offsets from `base` of the whole `unit`-aligned stretches of the address space that lie
/// within `base + from .. base + to`; `None` if there is none (or the addresses overflow).
/// Never beyond the range: what is outside it may belong to someone else.
pub(crate) fn whole_units(
    base: usize,
    from: usize,
    to: usize,
    unit: usize,
) -> Option<(usize, usize)> {
    let from = base.checked_add(from)?.checked_next_multiple_of(unit)? - base;
    let to = base.checked_add(to)? / unit * unit;
    let to = to.checked_sub(base)?;
    (from < to).then_some((from, to))
}

#[cfg(target_os = "linux")]
fn advise_range(at: usize, len: usize) {
    // SAFETY: the range lies inside the vector's own allocation and MADV_HUGEPAGE only changes
    // how the kernel backs it, never what it holds; the result is ignored (advice only).
    unsafe {
        libc::madvise(at as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_range(_at: usize, _len: usize) {}

#[cfg(all(test, target_os = "linux"))]
pub(crate) mod tests {
    /// Held by every test that advises memory or reads the advice back. The table test checks
    /// that its columns are not advised on a VM that reports free pages; in 2 of 9 full runs of
    /// the lib tests (never alone) it found advice, which only the test below gives.
    pub(crate) static ADVICE: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// Whether the memory at `addr` is in a mapping advised for huge pages (`hg` among the
    /// mapping's VmFlags in /proc/self/smaps).
    pub(crate) fn advised(addr: usize) -> bool {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut inside = false;
        for line in smaps.lines() {
            let range = line.split_whitespace().next().unwrap_or("");
            if let Some((a, b)) = range.split_once('-') {
                if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
                {
                    inside = (a..b).contains(&addr);
                    continue;
                }
            }
            if inside {
                if let Some(flags) = line.strip_prefix("VmFlags:") {
                    return flags.split_whitespace().any(|f| f == "hg");
                }
            }
        }
        false
    }

    #[test]
    fn whole_huge_pages_inside_the_buffer_are_advised() {
        let _advice = ADVICE.lock().unwrap_or_else(|e| e.into_inner());
        let v: Vec<u64> = Vec::with_capacity(3 * super::HUGE);
        let inner = (v.as_ptr() as usize).next_multiple_of(super::HUGE);
        assert!(!advised(inner), "advised before the advice");
        super::advise_anyway(&v);
        assert!(advised(inner));
        // A buffer smaller than a huge page is left alone.
        let small: Vec<u8> = Vec::with_capacity(super::HUGE / 2);
        super::advise_anyway(&small);
        assert!(!advised(small.as_ptr() as usize));
        // Take the advice back before the memory goes back to the allocator, so that no other
        // test's buffer can start life advised.
        let start = v.as_ptr() as usize;
        let (from, to) = super::whole_units(start, 0, 8 * v.capacity(), super::HUGE).unwrap();
        // SAFETY: the range is the one advised, inside `v`'s allocation; no contents change.
        unsafe {
            libc::madvise(
                (start + from) as *mut libc::c_void,
                to - from,
                libc::MADV_NOHUGEPAGE,
            );
        }
        assert!(!advised(inner));
    }

    #[test]
    fn a_balloon_that_reports_free_pages_is_found_by_its_feature_bit() {
        let scratch = crate::scratch::Scratch::new("balloon");
        let dir = scratch.join("virtio_balloon");
        let device = |name: &str, features: &str| {
            let d = dir.join(name);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("features"), features).unwrap();
        };
        let reports = || super::balloon_reports_free_pages(&dir);
        assert!(!reports(), "no driver directory");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("bind"), "").unwrap();
        assert!(!reports(), "no device bound");
        // Statistics and deflate-on-OOM (bits 1 and 2), no reporting.
        device("virtio0", "0110000000000000000000000000000010000000\n");
        assert!(!reports());
        // Not a device: its features do not count.
        device("module", "0000010000000000000000000000000000000000\n");
        assert!(!reports());
        // The benchmark VM's balloon: bit 5 set.
        device("virtio7", "0110010100000000000000000000000010000000\n");
        assert!(reports());
    }
}

#[cfg(test)]
mod stretch_tests {
    use super::whole_units;

    #[test]
    fn pages_are_handed_back_in_the_largest_whole_stretches_inside_the_range() {
        // Against every stretch of 8-byte units, found by trying them all.
        let unit = 8;
        for base in 0..24 {
            for from in 0..40 {
                for to in from..40 {
                    let aligned = |o: usize| (base + o).is_multiple_of(unit);
                    let want = (from..=to)
                        .filter(|&a| aligned(a))
                        .flat_map(|a| (a + 1..=to).filter(|&b| aligned(b)).map(move |b| (a, b)))
                        .max_by_key(|&(a, b)| b - a);
                    assert_eq!(
                        whole_units(base, from, to, unit),
                        want,
                        "{base} {from} {to}"
                    );
                }
            }
        }
        // Near the top of the address space nothing overflows.
        assert_eq!(whole_units(usize::MAX - 5, 0, 5, 8), None);
        assert_eq!(whole_units(usize::MAX - 20, 0, 20, 8), Some((5, 13)));
    }
}
