//! Signal numbers and `si_code` values of Linux, named and explained, so a core's NT_SIGINFO
//! reads as `SIGBUS` / `BUS_ADRERR` "nonexistent physical address". Tables only: no I/O.

/// Linux signal name for a number (x86-64 and aarch64 share the generic numbering).
pub fn signal_name(signo: i32) -> Option<&'static str> {
    Some(match signo {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        10 => "SIGUSR1",
        11 => "SIGSEGV",
        12 => "SIGUSR2",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        16 => "SIGSTKFLT",
        17 => "SIGCHLD",
        18 => "SIGCONT",
        19 => "SIGSTOP",
        20 => "SIGTSTP",
        21 => "SIGTTIN",
        22 => "SIGTTOU",
        23 => "SIGURG",
        24 => "SIGXCPU",
        25 => "SIGXFSZ",
        26 => "SIGVTALRM",
        27 => "SIGPROF",
        28 => "SIGWINCH",
        29 => "SIGIO",
        30 => "SIGPWR",
        31 => "SIGSYS",
        _ => return None,
    })
}

/// Signal number for a name, with or without the `SIG` prefix (`BUS`, `SIGBUS`).
pub fn signal_number(name: &str) -> Option<i32> {
    let n = name.trim().to_ascii_uppercase();
    let n = n.strip_prefix("SIG").unwrap_or(&n);
    (1..=31).find(|&i| signal_name(i).is_some_and(|s| &s[3..] == n))
}

/// The name of a signal, or `SIG<n>` (realtime signals and unknown numbers).
pub fn signal_label(signo: i32) -> String {
    match signal_name(signo) {
        Some(s) => s.to_string(),
        None if (32..=64).contains(&signo) => format!("SIGRTMIN+{}", signo - 32),
        None => format!("SIG{signo}"),
    }
}

/// `si_code` decoded to its name and meaning. Codes <= 0 mean "sent by someone" whatever the
/// signal; positive codes are specific to the signal that carries them.
pub fn si_code_name(signo: i32, code: i32) -> Option<(&'static str, &'static str)> {
    let generic = match code {
        0 => Some(("SI_USER", "sent by kill() from a process")),
        0x80 => Some(("SI_KERNEL", "sent by the kernel")),
        -1 => Some(("SI_QUEUE", "sent by sigqueue()")),
        -2 => Some(("SI_TIMER", "POSIX timer expired")),
        -3 => Some(("SI_MESGQ", "POSIX message queue state changed")),
        -4 => Some(("SI_ASYNCIO", "asynchronous I/O completed")),
        -5 => Some(("SI_SIGIO", "queued SIGIO")),
        -6 => Some((
            "SI_TKILL",
            "sent by tkill()/tgkill(), e.g. abort() or raise()",
        )),
        _ => None,
    };
    if code <= 0 || code == 0x80 {
        return generic;
    }
    let specific = match (signo, code) {
        (4, 1) => ("ILL_ILLOPC", "illegal opcode"),
        (4, 2) => ("ILL_ILLOPN", "illegal operand"),
        (4, 3) => ("ILL_ILLADR", "illegal addressing mode"),
        (4, 4) => ("ILL_ILLTRP", "illegal trap"),
        (4, 5) => ("ILL_PRVOPC", "privileged opcode"),
        (4, 6) => ("ILL_PRVREG", "privileged register"),
        (4, 7) => ("ILL_COPROC", "coprocessor error"),
        (4, 8) => ("ILL_BADSTK", "internal stack error"),
        (8, 1) => ("FPE_INTDIV", "integer divide by zero"),
        (8, 2) => ("FPE_INTOVF", "integer overflow"),
        (8, 3) => ("FPE_FLTDIV", "floating-point divide by zero"),
        (8, 4) => ("FPE_FLTOVF", "floating-point overflow"),
        (8, 5) => ("FPE_FLTUND", "floating-point underflow"),
        (8, 6) => ("FPE_FLTRES", "floating-point inexact result"),
        (8, 7) => ("FPE_FLTINV", "floating-point invalid operation"),
        (8, 8) => ("FPE_FLTSUB", "subscript out of range"),
        (11, 1) => ("SEGV_MAPERR", "address not mapped to object"),
        (11, 2) => ("SEGV_ACCERR", "invalid permissions for mapped object"),
        (11, 3) => ("SEGV_BNDERR", "failed address bound checks"),
        (11, 4) => ("SEGV_PKUERR", "access denied by memory protection keys"),
        (11, 5) => ("SEGV_ACCADI", "ADI not enabled for mapped object"),
        (11, 6) => ("SEGV_ADIDERR", "disrupting MCD error"),
        (11, 7) => ("SEGV_ADIPERR", "precise MCD exception"),
        (11, 8) => ("SEGV_MTEAERR", "asynchronous ARM MTE error"),
        (11, 9) => ("SEGV_MTESERR", "synchronous ARM MTE exception"),
        (11, 10) => ("SEGV_CPERR", "control protection fault (shadow stack)"),
        (7, 1) => ("BUS_ADRALN", "invalid address alignment"),
        (7, 2) => ("BUS_ADRERR", "nonexistent physical address"),
        (7, 3) => ("BUS_OBJERR", "object-specific hardware error"),
        (7, 4) => (
            "BUS_MCEERR_AR",
            "hardware memory error consumed on a machine check: action required",
        ),
        (7, 5) => (
            "BUS_MCEERR_AO",
            "hardware memory error detected in process but not consumed: action optional",
        ),
        (5, 1) => ("TRAP_BRKPT", "process breakpoint"),
        (5, 2) => ("TRAP_TRACE", "process trace trap"),
        (5, 3) => ("TRAP_BRANCH", "process taken branch trap"),
        (5, 4) => ("TRAP_HWBKPT", "hardware breakpoint/watchpoint"),
        (17, 1) => ("CLD_EXITED", "child has exited"),
        (17, 2) => ("CLD_KILLED", "child was killed"),
        (17, 3) => ("CLD_DUMPED", "child terminated abnormally"),
        (17, 4) => ("CLD_TRAPPED", "traced child has trapped"),
        (17, 5) => ("CLD_STOPPED", "child has stopped"),
        (17, 6) => ("CLD_CONTINUED", "stopped child has continued"),
        (31, 1) => ("SYS_SECCOMP", "seccomp triggered"),
        _ => return None,
    };
    Some(specific)
}

/// Signals whose siginfo carries a fault address (`si_addr`).
pub fn has_fault_addr(signo: i32) -> bool {
    matches!(signo, 4 | 7 | 8 | 11 | 5)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bus_adrerr_is_named_and_explained() {
        assert_eq!(signal_name(7), Some("SIGBUS"));
        assert_eq!(
            si_code_name(7, 2),
            Some(("BUS_ADRERR", "nonexistent physical address"))
        );
        assert_eq!(si_code_name(11, 2).map(|c| c.0), Some("SEGV_ACCERR"));
        assert_eq!(si_code_name(6, -6).map(|c| c.0), Some("SI_TKILL"));
        assert_eq!(si_code_name(11, 0x80).map(|c| c.0), Some("SI_KERNEL"));
        assert_eq!(si_code_name(11, 99), None);
    }

    #[test]
    fn names_round_trip_with_or_without_prefix() {
        assert_eq!(signal_number("BUS"), Some(7));
        assert_eq!(signal_number("SIGSEGV"), Some(11));
        assert_eq!(signal_number("nope"), None);
        assert_eq!(signal_label(34), "SIGRTMIN+2");
    }
}
