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
    /// Nothing more from the program, while `nvidia-smi` typed after its last line shows
    /// the GPUs still held (busy, or their memory in use): its processes are alive and
    /// silent.
    GpusHeld,
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

/// A user's note in a paste, wholly in parentheses (`(hangs here)`, `(no output after 20
/// minutes)`): not the program's output, as a `# ` comment is not. A prefix in parentheses
/// before a message (Ray's `(pid=123) …`) is output.
fn note(t: &str) -> bool {
    t.len() > 2 && t.starts_with('(') && t.ends_with(')') && !t[1..t.len() - 1].contains([')', '('])
}

/// `nvidia-smi`'s output (a query's CSV rows or its table) showing a GPU held: a row with a
/// utilization of 90 % or more, or 1 GiB or more of its memory in use. `topo` and other
/// subcommands show no such rows.
fn gpus_held(cmd: &str, output: &[&str]) -> bool {
    let first = cmd
        .split_whitespace()
        .find(|w| !w.contains('='))
        .unwrap_or("");
    if first.rsplit('/').next() != Some("nvidia-smi") || cmd.contains(" topo") {
        return false;
    }
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(r"\b(\d+)\s?(%|MiB)(?:\s|,|\||$)").expect("nvidia-smi row regex")
    });
    output.iter().any(|row| {
        let mut util = None;
        let mut used = None;
        for c in re.captures_iter(row) {
            let n: u64 = c[1].parse().unwrap_or(0);
            match &c[2] {
                "%" if util.is_none() => util = Some(n),
                "MiB" if used.is_none() => used = Some(n),
                _ => {}
            }
        }
        // A row names both: a GPU's line, not a header or a process.
        matches!((util, used), (Some(u), Some(m)) if u >= 90 || m >= 1024)
    })
}

fn interrupt(t: &str) -> bool {
    t.starts_with("^C")
        // Docker Compose stopping its containers after a Ctrl-C: part of the interrupt.
        || t.starts_with("Gracefully stopping... (press Ctrl+C again to force)")
        || t.starts_with("[+] Stopping ")
        || (t.contains("Container ") && (t.ends_with(" Stopped") || t.ends_with(" Stopping")))
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
    // Where the output of the command typed last (so far, reading back) begins, and whether
    // an `nvidia-smi` typed after the program's last line showed its GPUs held.
    let mut after = 0;
    let mut held = false;
    for (i, raw) in rev.iter().enumerate() {
        let t = raw.trim();
        if t.is_empty() || t == "#" || t.starts_with("# ") || note(t) {
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
            Some(Some(cmd)) => {
                match last {
                    // What was taken for the run's last line is this side command's output.
                    Some(l) if !shows_run(cmd) && i - l <= SIDE_OUTPUT => {
                        held |= gpus_held(cmd, &rev[after..i]);
                        last = None;
                    }
                    Some(_) => break,
                    // The run was launched, printed nothing and was interrupted: its
                    // command line is where it stood.
                    None if shows_run(cmd) && stop == Stop::Interrupted => {
                        last = Some(i);
                        break;
                    }
                    None if shows_run(cmd) => break,
                    None => {}
                }
                after = i + 1;
            }
            None => {
                if last.is_none() {
                    last = Some(i);
                } else if last.is_some_and(|l| i - l > SIDE_OUTPUT) {
                    break;
                }
            }
        }
    }
    if held && stop == Stop::Open {
        stop = Stop::GpusHeld;
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
    fn nvidia_smi_after_the_last_line_showing_busy_gpus_says_they_are_held() {
        let log = "$ torchrun --nproc_per_node=2 fit.py\n[rank0]: building the model\n\
            $ nvidia-smi --query-gpu=index,name,utilization.gpu,memory.used --format=csv\n\
            index, name, utilization.gpu [%], memory.used [MiB]\n\
            0, NVIDIA RTX 4000, 100 %, 900 MiB\n\
            1, NVIDIA RTX 4000, 99 %, 900 MiB\n";
        let e = end_of(log);
        assert_eq!(e.stop, Stop::GpusHeld);
        assert!(e.last.unwrap().text.ends_with("building the model"));
        // Idle GPUs with little memory in use, or only the topology: nothing is held.
        let idle = log.replace("100 %", "0 %").replace("99 %", "3 %");
        assert_eq!(end_of(&idle).stop, Stop::Open);
        let topo = "step 3/10 loss 1.0\n$ nvidia-smi topo -m\n\tGPU0\tGPU1\nGPU0\t X \tSYS\n";
        assert_eq!(end_of(topo).stop, Stop::Open);
        // The table form: memory in use on a GPU's row.
        let table = "step 3/10 loss 1.0\n$ nvidia-smi\n| N/A   51C    P2   88W / 300W |  30211MiB / 40960MiB |      0%      Default |\n";
        assert_eq!(end_of(table).stop, Stop::GpusHeld);
    }

    #[test]
    fn a_note_in_parentheses_is_not_the_run_and_a_silent_launch_is_where_it_stood() {
        let e = end_of(
            "$ torchrun --nproc_per_node 2 probe.py\n^C\n(nothing printed for ten minutes)\n",
        );
        assert_eq!(e.stop, Stop::Interrupted);
        assert!(e.last.unwrap().text.starts_with("$ torchrun"));
        // Ray's prefix in parentheses is output.
        let e = end_of("(Worker pid=7) epoch 2/9 (resumed)\n");
        assert!(e.last.unwrap().text.starts_with("(Worker pid=7)"));
        // Docker Compose's teardown after a Ctrl-C is part of the interrupt.
        let e = end_of(concat!(
            "app-1  | NCCL INFO comm 0x1 rank 0 nranks 2 - Init COMPLETE\n",
            "^CGracefully stopping... (press Ctrl+C again to force)\n",
            "[+] Stopping 1/1\n",
            " \u{2714} Container proj-app-1  Stopped\n",
        ));
        assert_eq!(e.stop, Stop::Interrupted);
        assert!(e.last.unwrap().text.ends_with("Init COMPLETE"));
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
