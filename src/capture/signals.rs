//! Catching SIGINT/SIGTERM/SIGHUP while runs are active, so `run` can forward them to its
//! child's process group. The handler only writes the signal number to a self-pipe; a
//! dispatcher thread hands it to every active run. Signals ignored when we started (nohup)
//! stay ignored, and the previous dispositions come back when the last run ends.

use std::io;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI32, Ordering};

pub(crate) const FORWARDED: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

static PIPE_W: AtomicI32 = AtomicI32::new(-1);

type Callback = Box<dyn Fn(libc::c_int) + Send>;

struct Registry {
    next_id: u64,
    subscribers: Vec<(u64, Callback)>,
    saved: Vec<(libc::c_int, libc::sigaction)>,
    dispatcher: bool,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    next_id: 0,
    subscribers: Vec::new(),
    saved: Vec::new(),
    dispatcher: false,
});

/// While alive, the forwarded signals reach the callback instead of killing the process.
pub(crate) struct Subscription {
    id: u64,
}

extern "C" fn on_signal(sig: libc::c_int) {
    // Async-signal-safe: one write(2) to a non-blocking pipe, errno preserved.
    // SAFETY: errno location is thread-local and valid; write on a pipe fd we own.
    unsafe {
        let errno = *libc::__errno_location();
        let fd = PIPE_W.load(Ordering::Relaxed);
        if fd >= 0 {
            let b = sig as u8;
            libc::write(fd, (&b as *const u8).cast(), 1);
        }
        *libc::__errno_location() = errno;
    }
}

pub(crate) fn subscribe(cb: impl Fn(libc::c_int) + Send + 'static) -> io::Result<Subscription> {
    let mut reg = REGISTRY.lock().unwrap_or_else(|p| p.into_inner());
    if !reg.dispatcher {
        start_dispatcher()?;
        reg.dispatcher = true;
    }
    if reg.subscribers.is_empty() {
        for sig in FORWARDED {
            // SAFETY: sigaction with structs we own; the handler is async-signal-safe.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, std::ptr::null(), &mut old) != 0 {
                    continue;
                }
                if old.sa_sigaction == libc::SIG_IGN {
                    // Started under nohup / as a background job: keep ignoring it.
                    continue;
                }
                let mut new: libc::sigaction = std::mem::zeroed();
                new.sa_sigaction = on_signal as *const () as usize;
                new.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut new.sa_mask);
                if libc::sigaction(sig, &new, std::ptr::null_mut()) == 0 {
                    reg.saved.push((sig, old));
                }
            }
        }
    }
    let id = reg.next_id;
    reg.next_id += 1;
    reg.subscribers.push((id, Box::new(cb)));
    Ok(Subscription { id })
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut reg = REGISTRY.lock().unwrap_or_else(|p| p.into_inner());
        reg.subscribers.retain(|(id, _)| *id != self.id);
        if reg.subscribers.is_empty() {
            for (sig, old) in reg.saved.drain(..) {
                // SAFETY: restoring the disposition saved in `subscribe`.
                unsafe { libc::sigaction(sig, &old, std::ptr::null_mut()) };
            }
        }
    }
}

/// The forwarded signals this process ignores: it was started under `nohup`, or as a background
/// job of a shell without job control (`cmd &` in a script), where SIGINT and SIGQUIT are set to
/// be ignored and the ignore is inherited across exec. `subscribe` leaves them ignored (their
/// owner chose so), so they never reach the command either: `run` says so when it starts.
pub(crate) fn ignored() -> Vec<libc::c_int> {
    FORWARDED
        .into_iter()
        .filter(|&sig| {
            // SAFETY: querying a disposition into a zeroed struct we own.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                libc::sigaction(sig, std::ptr::null(), &mut old) == 0
                    && old.sa_sigaction == libc::SIG_IGN
            }
        })
        .collect()
}

fn start_dispatcher() -> io::Result<()> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 fills two fds we own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // The write end must never block inside a signal handler.
    // SAFETY: fcntl on an fd we just created.
    unsafe {
        let fl = libc::fcntl(fds[1], libc::F_GETFL);
        libc::fcntl(fds[1], libc::F_SETFL, fl | libc::O_NONBLOCK);
    }
    PIPE_W.store(fds[1], Ordering::Relaxed);
    let rd = fds[0];
    std::thread::Builder::new()
        .name("trainwreck-signals".into())
        .spawn(move || {
            let mut b = 0u8;
            loop {
                // SAFETY: reading one byte into a local from our pipe.
                let n = unsafe { libc::read(rd, (&mut b as *mut u8).cast(), 1) };
                if n == 1 {
                    let reg = REGISTRY.lock().unwrap_or_else(|p| p.into_inner());
                    for (_, cb) in &reg.subscribers {
                        cb(libc::c_int::from(b));
                    }
                } else if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                    continue;
                } else {
                    return;
                }
            }
        })?;
    Ok(())
}

/// `SIGBUS` for 7 (numbers differ between architectures, so built from libc's constants).
pub fn signal_name(sig: i32) -> String {
    const NAMES: &[(libc::c_int, &str)] = &[
        (libc::SIGHUP, "SIGHUP"),
        (libc::SIGINT, "SIGINT"),
        (libc::SIGQUIT, "SIGQUIT"),
        (libc::SIGILL, "SIGILL"),
        (libc::SIGTRAP, "SIGTRAP"),
        (libc::SIGABRT, "SIGABRT"),
        (libc::SIGBUS, "SIGBUS"),
        (libc::SIGFPE, "SIGFPE"),
        (libc::SIGKILL, "SIGKILL"),
        (libc::SIGUSR1, "SIGUSR1"),
        (libc::SIGSEGV, "SIGSEGV"),
        (libc::SIGUSR2, "SIGUSR2"),
        (libc::SIGPIPE, "SIGPIPE"),
        (libc::SIGALRM, "SIGALRM"),
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGCHLD, "SIGCHLD"),
        (libc::SIGCONT, "SIGCONT"),
        (libc::SIGSTOP, "SIGSTOP"),
        (libc::SIGTSTP, "SIGTSTP"),
        (libc::SIGTTIN, "SIGTTIN"),
        (libc::SIGTTOU, "SIGTTOU"),
        (libc::SIGURG, "SIGURG"),
        (libc::SIGXCPU, "SIGXCPU"),
        (libc::SIGXFSZ, "SIGXFSZ"),
        (libc::SIGVTALRM, "SIGVTALRM"),
        (libc::SIGPROF, "SIGPROF"),
        (libc::SIGWINCH, "SIGWINCH"),
        (libc::SIGIO, "SIGIO"),
        (libc::SIGPWR, "SIGPWR"),
        (libc::SIGSYS, "SIGSYS"),
    ];
    NAMES
        .iter()
        .find(|(n, _)| *n == sig)
        .map(|(_, s)| s.to_string())
        .unwrap_or_else(|| format!("SIG{sig}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_platform_numbers() {
        assert_eq!(signal_name(libc::SIGBUS), "SIGBUS");
        assert_eq!(signal_name(libc::SIGKILL), "SIGKILL");
        assert_eq!(signal_name(200), "SIG200");
    }
}
