//! A read-only mapping of a capture file that survives the file being truncated under it.
//!
//! Reading a mapped page that lies past the end of a file that shrank raises SIGBUS, and its
//! default action kills the process: an embedding application could not catch it. On Linux this
//! module guards the mappings it makes. A SIGBUS handler, installed once and chained to whatever
//! handler was there before, recognises a fault inside a guarded mapping, maps zero pages over
//! the rest of that mapping (so the faulting load completes and every later one does too) and
//! marks the mapping truncated. The reader looks at the mark before it hands out each packet and
//! at its end, and turns it into an error: the zeros are never mistaken for packets. A fault
//! anywhere else goes on to the previous handler, or to the default action, as if this handler
//! were not there.
//!
//! Elsewhere, or when the handler cannot be installed, a mapping is unguarded and only made when
//! the caller asks for one explicitly (`ReadOptions::mmap`, whose default is [`GUARDED`]).

#[cfg(unix)]
use crate::huge_pages::whole_units;
use memmap2::Mmap;
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering};

/// The mark of a mapping that is not guarded, and of a buffer that is not mapped.
pub(crate) static NEVER: AtomicBool = AtomicBool::new(false);

/// Whether this platform guards mappings: then reading plain files through a mapping is the
/// default (it saves the kernel's copy; see benches/RESULTS.md).
pub const GUARDED: bool = cfg!(target_os = "linux");

/// A mapped file, registered with the SIGBUS guard while it lives.
pub(crate) struct Mapping {
    map: Mmap,
    /// Kept open to compare the file's length with the mapping's at the end.
    file: std::fs::File,
    /// Its slot in the guard's registry, when guarded.
    slot: Option<usize>,
}

impl Mapping {
    /// Map `file` read-only. With `require_guard`, `None` unless the mapping can be guarded (the
    /// caller then reads through a buffer instead).
    pub(crate) fn new(file: std::fs::File, require_guard: bool) -> Option<Mapping> {
        // SAFETY: the mapping is read-only and never handed out beyond the readers that share
        // it. Its one hazard, the file being truncated while it is mapped, is what the guard
        // turns into an error (or, unguarded, the documented contract of the explicit option).
        let map = unsafe { Mmap::map(&file) }.ok()?;
        let slot = guard::register(map.as_ptr() as usize, map.len());
        if require_guard && slot.is_none() {
            return None;
        }
        Some(Mapping { map, file, slot })
    }

    /// The file is shorter than the mapping now: either a fault past its new end was caught
    /// ([`Mapping::truncated`]), or it shrank within the mapping's last page, whose vanished
    /// bytes read as zeros without a fault. For the end of reading and its errors.
    #[cold]
    pub(crate) fn shrank(&self) -> bool {
        self.truncated()
            || self
                .file
                .metadata()
                .is_ok_and(|m| m.len() < self.map.len() as u64)
    }

    /// The file shrank while mapped: some bytes of the mapping are zeros, not the file's.
    #[inline]
    pub(crate) fn truncated(&self) -> bool {
        self.flag().load(Ordering::Acquire)
    }

    /// The mark [`Mapping::truncated`] reads, for a reader to look at per packet without
    /// going through the mapping; it lives as long as the program (a slot of the registry).
    pub(crate) fn flag(&self) -> &'static AtomicBool {
        self.slot.map_or(&NEVER, guard::flag)
    }

    /// Let the kernel drop the page-table entries of `from..to`, which the reader has passed:
    /// the pages stay in the page cache, and the process's resident memory stays bounded by
    /// what it is still reading instead of growing to the file's size. Reading them again
    /// would fault them back in with the same bytes. Only whole stretches of `RELEASE_UNIT`
    /// within `from..to` go: the chunk readers of a split file share one mapping, and the bytes
    /// before one's `from` are another's (each leaves at most the part-stretch at its start
    /// resident). Returns where the pages handed back end: the next call starts there.
    pub(crate) fn release(&self, from: usize, to: usize) -> usize {
        #[cfg(unix)]
        {
            let base = self.map.as_ptr() as usize;
            let to = to.min(self.map.len());
            let Some((from, to)) = whole_units(base, from, to, RELEASE_UNIT) else {
                return from;
            };
            // SAFETY: the range lies inside the mapping, page aligned; a read-only file
            // mapping refaults dropped pages from the file, so no byte changes.
            unsafe {
                libc::madvise(
                    self.map.as_ptr().add(from) as *mut libc::c_void,
                    to - from,
                    libc::MADV_DONTNEED,
                );
            }
            to
        }
        #[cfg(not(unix))]
        {
            let _ = from;
            to
        }
    }

    pub(crate) fn advise_sequential(&self) {
        #[cfg(unix)]
        let _ = self.map.advise(memmap2::Advice::Sequential);
    }
}

impl std::fmt::Debug for Mapping {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mapping")
            .field("len", &self.map.len())
            .field("guarded", &self.slot.is_some())
            .finish()
    }
}

impl Deref for Mapping {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        &self.map
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // Unregistered before `map` is unmapped (fields drop after this), so the handler never
        // claims a fault at an address that is no longer this mapping.
        if let Some(slot) = self.slot {
            guard::unregister(slot);
        }
    }
}

/// Pages are handed back in whole 2 MiB stretches of the address space. The page cache of a
/// 6.x kernel holds a large file in large folios and maps them a 2 MiB page-table entry at a
/// time (ext4 here: `FilePmdMapped` in smaps); a range that cut through such an entry made the
/// kernel split it into 512 small ones first, and each split sent the other core an interrupt to
/// flush its TLB. With whole stretches, `scan_bench` with two threads took 1.23–1.31 s against
/// 1.33–1.49 s on the snaplen-128 pcap and 0.272–0.310 s (median 0.288) against 0.294–0.315 s
/// (0.303) on the full-frame one (alternated runs; benches/RESULTS.md). A multiple of every base
/// page size in use, so also a whole number of small pages where no large ones are mapped.
#[cfg(unix)]
const RELEASE_UNIT: usize = crate::huge_pages::HUGE;

/// The system's page size, asked once; until then (and if it cannot be told) 4096. Read by the
/// signal handler too, so only an atomic load once known.
#[cfg(target_os = "linux")]
fn page_size() -> usize {
    use std::sync::atomic::AtomicUsize;
    static PAGE: AtomicUsize = AtomicUsize::new(0);
    match PAGE.load(Ordering::Relaxed) {
        0 => {
            // SAFETY: sysconf has no preconditions.
            let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
                .ok()
                .filter(|&p| p > 0)
                .unwrap_or(4096);
            PAGE.store(page, Ordering::Relaxed);
            page
        }
        page => page,
    }
}

#[cfg(target_os = "linux")]
mod guard {
    use super::page_size;
    use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
    use std::sync::Mutex;

    /// Mappings guarded at once; past that, files are read through a buffer.
    const SLOTS: usize = 256;

    struct Region {
        used: AtomicBool,
        /// 0 while the slot is free or being set up.
        start: AtomicUsize,
        end: AtomicUsize,
        truncated: AtomicBool,
    }

    #[allow(clippy::declare_interior_mutable_const)]
    const FREE: Region = Region {
        used: AtomicBool::new(false),
        start: AtomicUsize::new(0),
        end: AtomicUsize::new(0),
        truncated: AtomicBool::new(false),
    };
    static REGIONS: [Region; SLOTS] = [FREE; SLOTS];

    /// The handler that was installed before ours, and its flags: where other faults go.
    static PREVIOUS: AtomicUsize = AtomicUsize::new(libc::SIG_DFL);
    static PREVIOUS_FLAGS: AtomicI32 = AtomicI32::new(0);
    static INSTALL: Mutex<()> = Mutex::new(());

    pub(super) fn register(start: usize, len: usize) -> Option<usize> {
        if len == 0 || !installed() {
            return None;
        }
        let slot = REGIONS.iter().position(|r| {
            r.used
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        })?;
        let r = &REGIONS[slot];
        r.truncated.store(false, Ordering::Relaxed);
        r.end.store(start.saturating_add(len), Ordering::Relaxed);
        r.start.store(start, Ordering::Release);
        Some(slot)
    }

    pub(super) fn unregister(slot: usize) {
        let r = &REGIONS[slot];
        r.start.store(0, Ordering::Release);
        r.used.store(false, Ordering::Release);
    }

    pub(super) fn flag(slot: usize) -> &'static AtomicBool {
        &REGIONS[slot].truncated
    }

    /// Make sure our handler is the installed one, installing it (again) if another handler
    /// replaced it since: checked whenever a mapping is made, so a handler installed later by
    /// the application (Python's faulthandler, say) is chained to rather than lost.
    fn installed() -> bool {
        let _lock = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
        // The handler must find the page size known: ask for it here, outside any signal.
        page_size();
        // SAFETY: sigaction with valid pointers; the struct is plain data.
        unsafe {
            let mut current: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut current) != 0 {
                return false;
            }
            if current.sa_sigaction == handler() {
                return true;
            }
            PREVIOUS_FLAGS.store(current.sa_flags, Ordering::Relaxed);
            PREVIOUS.store(current.sa_sigaction, Ordering::Release);
            let mut ours: libc::sigaction = std::mem::zeroed();
            ours.sa_sigaction = handler();
            // On the alternate stack when the thread has one (a fault near a stack's end).
            ours.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut ours.sa_mask);
            let mut replaced: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGBUS, &ours, &mut replaced) != 0 {
                return false;
            }
            if replaced.sa_sigaction != current.sa_sigaction {
                PREVIOUS_FLAGS.store(replaced.sa_flags, Ordering::Relaxed);
                PREVIOUS.store(replaced.sa_sigaction, Ordering::Release);
            }
            true
        }
    }

    type Handler = extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void);

    /// Our handler as `sigaction` stores it.
    fn handler() -> libc::sighandler_t {
        let f: Handler = on_sigbus;
        f as libc::sighandler_t
    }

    /// The registered mapping holding `addr`, if any.
    fn region_of(addr: usize) -> Option<&'static Region> {
        REGIONS.iter().find(|r| {
            let start = r.start.load(Ordering::Acquire);
            start != 0 && addr >= start && addr < r.end.load(Ordering::Relaxed)
        })
    }

    /// Only async-signal-safe work: atomics, `mmap`, `sigaction`, `raise`.
    extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
        // SAFETY: the kernel passes a valid siginfo for an SA_SIGINFO handler.
        let (code, addr) = unsafe { ((*info).si_code, (*info).si_addr() as usize) };
        // si_code > 0: raised by the kernel for a faulting access (not sent by a process).
        if code > 0 {
            if let Some(r) = region_of(addr) {
                let page = addr & !(page_size() - 1);
                let end = r.end.load(Ordering::Relaxed);
                // SAFETY: page..end lies inside the mapping, which lives (it is unregistered
                // before it is unmapped); zero pages replace the file's vanished ones.
                let zeros = unsafe {
                    libc::mmap(
                        page as *mut libc::c_void,
                        end - page,
                        libc::PROT_READ,
                        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                        -1,
                        0,
                    )
                };
                if zeros != libc::MAP_FAILED {
                    r.truncated.store(true, Ordering::Release);
                    return;
                }
            }
        }
        let previous = PREVIOUS.load(Ordering::Acquire);
        if previous == libc::SIG_DFL || previous == libc::SIG_IGN {
            if previous == libc::SIG_IGN && code <= 0 {
                return;
            }
            // SAFETY: restore the default action; a faulting access then repeats and the kernel
            // applies it, and a signal sent by a process is sent again.
            unsafe {
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(libc::SIGBUS, &default, std::ptr::null_mut());
                if code <= 0 {
                    libc::raise(libc::SIGBUS);
                }
            }
            return;
        }
        // SAFETY: `previous` was installed as a handler of this shape (its flags say which).
        unsafe {
            if PREVIOUS_FLAGS.load(Ordering::Relaxed) & libc::SA_SIGINFO != 0 {
                let f: Handler = std::mem::transmute(previous);
                f(sig, info, ctx);
            } else {
                let f: extern "C" fn(libc::c_int) = std::mem::transmute(previous);
                f(sig);
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod guard {
    pub(super) fn register(_start: usize, _len: usize) -> Option<usize> {
        None
    }
    pub(super) fn unregister(_slot: usize) {}
    pub(super) fn flag(_slot: usize) -> &'static std::sync::atomic::AtomicBool {
        &super::NEVER
    }
}
