//! How a log's output stops: the last line the program printed (not a shell prompt, a `^C`,
//! a comment or the output of a command typed after the run), what came after it (nothing,
//! the shell's prompt back, an interrupt), how often that line repeats at the end, and the
//! last progress line with whether its counters reached their totals. Read from the end of
//! the file that `last_lines` already holds, never from a second read; it decides nothing
//! (`correlate::ending` does).

use crate::sources::prefix;

/// At most this many lines from the end are looked at.
const WINDOW: usize = 400;

/// A side command's output (`nvidia-smi`, `ls`, `df`) is at most this long; a longer stretch
/// after a prompt is a run's own output.
const SIDE_OUTPUT: usize = 60;

/// What came after the program's last line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// Nothing: the log just ends (the run may still be going, or hang).
    #[default]
    Open,
    /// The shell's bare prompt right after the program's output: the program had exited.
    Prompt,
    /// An interrupt typed at the terminal (`^C`), or Python's `KeyboardInterrupt`.
    Interrupted,
}

/// A line near the end, counted back from the file's last line (0 = the last), and its line
/// number once the file's length in lines is known (`Ending::number`).
#[derive(Debug, Clone, PartialEq)]
pub struct EndLine {
    pub back: u64,
    pub line: u64,
    pub text: String,
}

/// How one log's output stops.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Ending {
    /// The program's last line.
    pub last: Option<EndLine>,
    pub stop: Stop,
    /// How many times in a row the last line's message (its prefix peeled) ends the log.
    pub repeats: u32,
    /// The last progress line (`epoch 3/10`, `iter: 250/1034`, a tqdm bar) at or before
    /// `last`, and whether every counter in it is short of its total.
    pub progress: Option<(EndLine, bool)>,
    /// The stack dumps of live processes among the end's lines (`stackdump`), one per
    /// process, oldest first.
    pub dumps: Vec<super::stackdump::Dump>,
}

impl Ending {
    /// Number its lines, the file being `lines` lines long.
    pub fn number(&mut self, lines: u64) {
        let at = |e: &mut EndLine| e.line = lines.saturating_sub(e.back).max(1);
        if let Some(e) = self.last.as_mut() {
            at(e);
        }
        if let Some((e, _)) = self.progress.as_mut() {
            at(e);
        }
        for d in &mut self.dumps {
            at(&mut d.at);
        }
    }
}

/// The line's text, trimmed and cut to a length a report can quote.
fn clip(t: &str) -> String {
    t.trim().chars().take(300).collect()
}

/// A shell prompt: `Some(None)` bare, `Some(Some(cmd))` with the command typed after it.
fn prompt(t: &str) -> Option<Option<&str>> {
    // Every form ends its prompt with `$`, `#` or `>`: without one, no regex to compile.
    if !t.contains(['$', '#', '>']) {
        return None;
    }
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(concat!(
            r"^(?:\([\w.-]+\)\s*)?",
            r"(?:(?:[\w.-]+@[\w.-]+(?::[^\s$#]*)?\s*[$#]|\$)(?:\s+(.*))?",
            // Windows' cmd and PowerShell: `C:\proj>python train.py`.
            r"|(?:PS )?[A-Z]:\\[^>]*>\s*(.*))$"
        ))
        .expect("prompt regex")
    });
    let c = re.captures(t)?;
    let cmd = c.get(1).or(c.get(2)).map(|m| m.as_str().trim());
    Some(cmd.filter(|s| !s.is_empty()))
}

/// A command whose output is the run's own log: a launcher, an interpreter, a script, or a
/// viewer of a log file.
fn shows_run(cmd: &str) -> bool {
    let first = cmd
        .split_whitespace()
        .find(|w| !w.contains('='))
        .unwrap_or("");
    let name = first.rsplit('/').next().unwrap_or(first);
    // A viewer of the machine's own files (`cat /proc/cmdline`, `grep … /etc/hosts`) shows the
    // machine, not the run's log.
    const VIEWERS: [&str; 6] = ["cat", "tail", "less", "more", "head", "grep"];
    if VIEWERS.contains(&name)
        && cmd.split_whitespace().any(|w| {
            ["/proc/", "/sys/", "/etc/"]
                .iter()
                .any(|p| w.starts_with(p))
        })
    {
        return false;
    }
    first.starts_with("./")
        || name.starts_with("python")
        || [
            "bash",
            "sh",
            "zsh",
            "torchrun",
            "deepspeed",
            "accelerate",
            "srun",
            "sbatch",
            "mpirun",
            "mpiexec",
            "horovodrun",
            "llamafactory-cli",
            "swift",
            "nohup",
            "cat",
            "tail",
            "less",
            "more",
            "head",
            "grep",
            "kubectl",
            "docker",
            "journalctl",
            "ray",
            "fleetrun",
            "time",
            "CUDA_VISIBLE_DEVICES",
        ]
        .contains(&name)
}

fn interrupt(t: &str) -> bool {
    t.starts_with("^C")
        || t == "KeyboardInterrupt"
        || t.starts_with("KeyboardInterrupt:")
        // torchrun relaying a Ctrl-C to its workers: part of the interrupt, not the run's output.
        || torchrun_interrupt(t)
        || t.ends_with("closing signal SIGINT")
}

/// torchrun's report that it received a Ctrl-C (`Received Signals.SIGINT death signal,
/// shutting down workers`; `Received 2 death signal` before torch 2.2).
pub(crate) fn torchrun_interrupt(t: &str) -> bool {
    t.contains(" death signal, shutting down workers")
        && (t.contains("Received Signals.SIGINT ")
            || t.contains("Received SIGINT ")
            || t.contains("Received 2 death"))
}

/// The counters of a progress line: `(done, total)` pairs.
fn counters(t: &str) -> Vec<(u64, u64)> {
    // Both forms hold `done/total`.
    if !t.contains('/') {
        return Vec::new();
    }
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(concat!(
            r"(?i:\b(?:epoch|iter(?:ation)?s?|step|batch)\b)\s*[:=]?\s*\[?\s*(\d+)\s*/\s*(\d+)",
            // A tqdm bar: `230/74736 [03:58<…`.
            r"|\b(\d+)/(\d+)\s*\[\d"
        ))
        .expect("progress regex")
    });
    re.captures_iter(t)
        .filter_map(|c| {
            let n = |i: usize| c.get(i).and_then(|m| m.as_str().parse::<u64>().ok());
            Some((n(1).or(n(3))?, n(2).or(n(4))?))
        })
        .filter(|(_, total)| *total > 0)
        .collect()
}

/// How the log whose end is `rev` (its lines, last first) stops.
pub fn read<'a>(rev: impl Iterator<Item = &'a str>) -> Ending {
    // A line redrawn with carriage returns (a progress bar) reads as its last drawing.
    let rev: Vec<&str> = rev
        .take(WINDOW)
        .map(|l| l.rsplit('\r').find(|p| !p.trim().is_empty()).unwrap_or(""))
        .collect();
    let mut end = Ending {
        dumps: super::stackdump::read(&rev, |t| prompt(t).is_some()),
        ..Ending::default()
    };
    // Index into `rev` of the program's last line, and the stop seen after it.
    let mut last: Option<usize> = None;
    let mut stop = Stop::Open;
    for (i, raw) in rev.iter().enumerate() {
        let t = raw.trim();
        if t.is_empty() || t == "#" || t.starts_with("# ") {
            continue;
        }
        if interrupt(t) {
            if last.is_none() {
                stop = stop.max(Stop::Interrupted);
            }
            continue;
        }
        match prompt(t) {
            Some(None) => {
                if last.is_none() {
                    stop = stop.max(Stop::Prompt);
                }
            }
            // A command typed at a prompt (`ls`, `nvidia-smi`) says the user had a shell,
            // not that the run had ended: it may go on in the background or another terminal.
            Some(Some(cmd)) => match last {
                // What was taken for the run's last line is this side command's output.
                Some(l) if !shows_run(cmd) && i - l <= SIDE_OUTPUT => last = None,
                Some(_) => break,
                None if shows_run(cmd) => break,
                None => {}
            },
            None => {
                if last.is_none() {
                    last = Some(i);
                } else if last.is_some_and(|l| i - l > SIDE_OUTPUT) {
                    break;
                }
            }
        }
    }
    let Some(l) = last else {
        end.stop = stop;
        return end;
    };
    end.stop = stop;
    let msg = |t: &str| {
        let t = t.trim();
        t[prefix::message_start(t).min(t.len())..]
            .trim()
            .to_string()
    };
    let last_msg = msg(rev[l]);
    end.repeats = rev[l..]
        .iter()
        .filter(|t| !t.trim().is_empty())
        .take_while(|t| msg(t) == last_msg)
        .count() as u32;
    end.last = Some(EndLine {
        back: l as u64,
        line: 0,
        text: clip(rev[l]),
    });
    end.progress = rev[l..].iter().enumerate().find_map(|(k, t)| {
        let c = counters(t);
        (!c.is_empty()).then(|| {
            let short = c.iter().any(|(done, total)| done < total);
            (
                EndLine {
                    back: (l + k) as u64,
                    line: 0,
                    text: clip(t),
                },
                short,
            )
        })
    });
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    fn end_of(text: &str) -> Ending {
        read(text.lines().rev())
    }

    #[test]
    fn a_trainer_log_with_the_prompt_back_mid_epoch() {
        let e = end_of(concat!(
            "2024-03-01 10:00:00 | INFO | trainer:1 - epoch: 7/120, iter: 40/900, loss: 3.2\n",
            "2024-03-01 10:00:04 | INFO | trainer:1 - epoch: 7/120, iter: 50/900, loss: 3.1\n",
            "(venv) ana@gpubox:~/det$ \n",
        ));
        assert_eq!(e.stop, Stop::Prompt);
        let last = e.last.unwrap();
        assert_eq!(last.back, 1);
        assert!(last.text.contains("iter: 50/900"));
        let (p, short) = e.progress.unwrap();
        assert_eq!(p.back, 1);
        assert!(short);
    }

    #[test]
    fn a_side_command_after_an_interrupt_is_not_the_run() {
        let e = end_of(concat!(
            "[2024-01-02 03:04:05,006] [INFO] [engine.py:1] Creating optimizer\n",
            "^C\n",
            "\n",
            "$ nvidia-smi --query-gpu=index,utilization.gpu --format=csv\n",
            "index, utilization.gpu [%]\n",
            "0, 100 %\n",
        ));
        assert_eq!(e.stop, Stop::Interrupted);
        assert!(e.last.unwrap().text.ends_with("Creating optimizer"));
        assert_eq!(e.progress, None);
    }

    #[test]
    fn a_launch_command_begins_the_run_and_repeats_are_counted() {
        let w = "[W socket.cpp:1] [c10d] The client socket has failed to connect to [::ffff:10.1.2.3]:29500 (errno: 110 - Connection timed out).";
        let text = format!("$ bash train.sh\n{w}\n{w}\n{w}\n");
        let e = end_of(&text);
        assert_eq!(e.stop, Stop::Open);
        assert_eq!(e.repeats, 3);
        assert_eq!(e.last.unwrap().back, 0);
    }

    #[test]
    fn a_finished_bar_is_not_short_and_a_comment_is_not_the_run() {
        let e = end_of(concat!(
            "100%|##########| 500/500 [10:00<00:00,  1.2it/s]\n",
            "# the run finished here\n",
        ));
        let (_, short) = e.progress.unwrap();
        assert!(!short);
        assert_eq!(e.last.unwrap().back, 1);
    }

    #[test]
    fn a_side_command_alone_does_not_end_the_run() {
        let e = end_of("step 200/500 loss 1.2\n$ ls log/\nworkerlog.0  workerlog.1\n");
        assert_eq!(e.stop, Stop::Open);
        assert!(e.last.unwrap().text.starts_with("step 200/500"));
    }

    #[test]
    fn a_viewer_of_the_machines_files_does_not_show_the_run() {
        assert!(shows_run("cat train.log"));
        assert!(!shows_run("cat /proc/cmdline"));
        assert!(!shows_run("grep -i iommu /etc/default/grub"));
    }

    #[test]
    fn torchruns_relay_of_a_ctrl_c_is_part_of_the_interrupt() {
        let log = [
            "[rank0]: step 3 loss 2.1",
            "[rank0]:[W304 17:40:37.1 ProcessGroupNCCL.cpp:4561] using GPU 0 to perform barrier",
            "^CW0304 18:52:09.410000 8123 api.py:704] Received Signals.SIGINT death signal, shutting down workers",
            "W0304 18:52:09.411000 8123 api.py:897] Sending process 8124 closing signal SIGINT",
        ];
        let e = read(log.iter().rev().copied());
        assert_eq!(e.stop, Stop::Interrupted);
        assert!(e.last.unwrap().text.contains("perform barrier"));
    }

    #[test]
    fn prompts_in_their_shapes() {
        assert_eq!(prompt("root@c0ffee:/workspace# "), Some(None));
        assert_eq!(prompt("$ ls log/"), Some(Some("ls log/")));
        assert_eq!(
            prompt("(base) u@h:~/x$ python train.py"),
            Some(Some("python train.py"))
        );
        assert_eq!(
            prompt(r"C:\Users\me\proj>python train.py"),
            Some(Some("python train.py"))
        );
        assert_eq!(prompt("loss $ 3.2"), None);
        assert_eq!(prompt("epoch 3/10 loss 2.1"), None);
    }
}
