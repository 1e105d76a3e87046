//! The output sink of `run`: every chunk the child writes goes to the terminal first, byte for
//! byte and unbuffered (progress bars end in `\r`), then to stdout.log/stderr.log and, under one
//! lock, to console.log so the interleaving is the order the wrapper read it. A log that cannot
//! be written (disk full) is dropped with one warning; the terminal and the child never stop.

use std::io::{self, Read, Write};
use std::sync::{Arc, Mutex};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stream {
    Out,
    Err,
}

type Sink = Box<dyn Write + Send>;

struct LogFile {
    name: &'static str,
    w: Option<Sink>,
}

struct Inner {
    term_out: Option<Sink>,
    term_err: Option<Sink>,
    out_log: LogFile,
    err_log: LogFile,
    console: LogFile,
    warned: bool,
    /// Every log that failed, for the manifest.
    failures: Vec<(String, String)>,
    bytes: [u64; 2],
}

pub(crate) struct Tee {
    inner: Mutex<Inner>,
    /// Where the log directory is, for the warning.
    dir: String,
    /// The warning's language.
    lang: crate::model::Lang,
}

impl Tee {
    pub fn new(
        dir: String,
        lang: crate::model::Lang,
        term_out: Sink,
        term_err: Sink,
        out_log: Option<Sink>,
        err_log: Option<Sink>,
        console: Option<Sink>,
    ) -> Tee {
        Tee {
            inner: Mutex::new(Inner {
                term_out: Some(term_out),
                term_err: Some(term_err),
                out_log: LogFile {
                    name: super::layout::STDOUT_LOG,
                    w: out_log,
                },
                err_log: LogFile {
                    name: super::layout::STDERR_LOG,
                    w: err_log,
                },
                console: LogFile {
                    name: super::layout::CONSOLE_LOG,
                    w: console,
                },
                warned: false,
                failures: Vec::new(),
                bytes: [0; 2],
            }),
            dir,
            lang,
        }
    }

    pub fn write(&self, stream: Stream, chunk: &[u8]) {
        // A poisoned lock only means another pump panicked mid-write; keep teeing.
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let inner = &mut *g;
        inner.bytes[stream as usize] += chunk.len() as u64;
        let term = match stream {
            Stream::Out => &mut inner.term_out,
            Stream::Err => &mut inner.term_err,
        };
        // The terminal goes away (a closed pipe): stop writing there, keep logging.
        if let Some(t) = term
            && t.write_all(chunk).and_then(|()| t.flush()).is_err()
        {
            *term = None;
        }
        let mut failed: Vec<(&'static str, io::Error)> = Vec::new();
        let log = match stream {
            Stream::Out => &mut inner.out_log,
            Stream::Err => &mut inner.err_log,
        };
        for lf in [log, &mut inner.console] {
            if let Some(w) = &mut lf.w
                && let Err(e) = w.write_all(chunk)
            {
                lf.w = None;
                failed.push((lf.name, e));
            }
        }
        for (name, e) in failed {
            if !inner.warned {
                inner.warned = true;
                let msg =
                    crate::report::i18n::Tr(self.lang).run_log_unwritable(&self.dir, name, &e);
                if let Some(t) = &mut inner.term_err {
                    let _ = t.write_all(msg.as_bytes());
                }
            }
            inner.failures.push((name.to_string(), e.to_string()));
        }
    }

    /// Logs that could not be written, with the error.
    pub fn failures(&self) -> Vec<(String, String)> {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .failures
            .clone()
    }

    /// Bytes seen on stdout and stderr.
    pub fn bytes(&self) -> (u64, u64) {
        let g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        (g.bytes[0], g.bytes[1])
    }
}

/// Copy one of the child's pipes into the tee until EOF.
pub(crate) fn pump(mut src: impl Read, tee: Arc<Tee>, stream: Stream) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match src.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => tee.write(stream, &buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        }
    }
}

/// Our own fd 1 or 2 as an unbuffered writer that is never closed.
pub(crate) fn terminal(fd: i32) -> Sink {
    use std::os::fd::FromRawFd;
    struct Fd(std::mem::ManuallyDrop<std::fs::File>);
    impl Write for Fd {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            (&*self.0).write(b)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    // SAFETY: fds 1 and 2 belong to the process for its lifetime; ManuallyDrop never closes them.
    Box::new(Fd(std::mem::ManuallyDrop::new(unsafe {
        std::fs::File::from_raw_fd(fd)
    })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Lang;

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    impl Shared {
        fn get(&self) -> Vec<u8> {
            self.0.lock().unwrap().clone()
        }
    }

    /// A disk that fills after `room` bytes.
    struct Full {
        room: usize,
    }
    impl Write for Full {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            if b.len() > self.room {
                return Err(io::Error::from_raw_os_error(libc::ENOSPC));
            }
            self.room -= b.len();
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn console_interleaves_in_read_order_and_terminal_gets_raw_bytes() {
        let (to, te, o, e, c) = Default::default();
        let (to, te, o, e, c): (Shared, Shared, Shared, Shared, Shared) = (to, te, o, e, c);
        let tee = Tee::new(
            "d".into(),
            Lang::En,
            Box::new(to.clone()),
            Box::new(te.clone()),
            Some(Box::new(o.clone())),
            Some(Box::new(e.clone())),
            Some(Box::new(c.clone())),
        );
        tee.write(Stream::Out, b"10%\r");
        tee.write(Stream::Err, b"warn\n");
        tee.write(Stream::Out, b"20%\r");
        assert_eq!(to.get(), b"10%\r20%\r");
        assert_eq!(te.get(), b"warn\n");
        assert_eq!(o.get(), b"10%\r20%\r");
        assert_eq!(e.get(), b"warn\n");
        assert_eq!(c.get(), b"10%\rwarn\n20%\r");
    }

    #[test]
    fn a_full_disk_warns_once_and_the_terminal_keeps_flowing() {
        for (lang, once) in [
            (Lang::En, "cannot write /logs/run-1/"),
            (Lang::Zh, "无法写入 /logs/run-1/"),
        ] {
            let (to, te): (Shared, Shared) = Default::default();
            let tee = Tee::new(
                "/logs/run-1".into(),
                lang,
                Box::new(to.clone()),
                Box::new(te.clone()),
                Some(Box::new(Full { room: 8 })),
                Some(Box::new(Full { room: 100 })),
                Some(Box::new(Full { room: 8 })),
            );
            for _ in 0..5 {
                tee.write(Stream::Out, b"step ok\n");
            }
            assert_eq!(to.get(), b"step ok\n".repeat(5));
            let warn = String::from_utf8(te.get()).unwrap();
            assert_eq!(warn.matches(once).count(), 1, "{warn}");
            assert_eq!(warn.lines().count(), 1, "{warn}");
            assert!(warn.contains("No space left on device"), "{warn}");
            assert_eq!(tee.failures().len(), 2);
        }
    }
}
