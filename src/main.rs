//! The `trainwreck` binary: parse arguments, run the library, exit with its status.

use clap::Parser;

fn main() {
    let cli = trainwreck::cli::Cli::parse();
    // glibc: one malloc arena per worker thread. An arena keeps what was freed in it, so one
    // arena for two threads saved 5 MiB of peak RSS on the 4 GB bench dir; but the scan
    // threads allocate per NCCL identity line, and 16 threads sharing one arena spent 3 s of
    // system time a GB in futex waits on its lock (0.57 s wall instead of 0.22 s, 1 GB dir).
    // glibc fixes the limit when a second thread first allocates, so it is set here, before
    // any thread exists (the rules load with one helper thread).
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only tunes the allocator; called before any thread exists.
    unsafe {
        libc::mallopt(
            libc::M_ARENA_MAX,
            cli.worker_threads().clamp(1, 64) as libc::c_int,
        );
    }
    std::process::exit(trainwreck::cli::run(cli));
}
