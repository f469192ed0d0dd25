//! The allocator's settings (issue 28 item 6; see docs/benchmarks.md, "Memory").
//!
//! huddle uses the system's allocator (glibc's malloc) unless it is built with the `mimalloc`
//! feature. glibc gives each thread that allocates an arena of its own (up to eight per core),
//! and what one thread frees stays in its arena; huddle's threads hand data to each other all the
//! time (events, lines for the writers), so memory spread over many arenas is held but not used.
//! [`tune`] caps the arenas at [`ARENAS`].

/// glibc arenas at most: one, shared by every thread (each thread keeps its own small cache of
/// freed blocks, so they seldom wait for each other). A second arena held 0.5-0.7 MiB more
/// in a 6,000-message run and saved no measurable time (docs/benchmarks.md, "Memory").
pub const ARENAS: i32 = 1;

/// Applies the allocator's settings; call it first in `main`, before any thread starts (the
/// benchmarks call it too, so that they measure what `huddle` does).
pub fn tune() {
    #[cfg(all(not(feature = "mimalloc"), target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a parameter of the allocator; no thread allocates concurrently
    // (called before any starts).
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, ARENAS);
    }
}
