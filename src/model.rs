//! The shared vocabulary every stage speaks: facts with provenance, warnings, texts for
//! people in both languages, and the closed vocabularies (category, action, verdict, rule status) as enums with one
//! spelling each. Plain data only: nothing here reads files, runs regexes or prints.

use serde::Serialize;
use std::fmt;

/// A fact's value. Sizes are bytes, times are seconds, counts are integers.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum FactValue {
    Int(i64),
    Float(f64),
    Bool(bool),
    Text(String),
}

impl FactValue {
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            FactValue::Int(i) => Some(*i as f64),
            FactValue::Float(f) => Some(*f),
            FactValue::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
            FactValue::Text(_) => None,
        }
    }
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            FactValue::Int(i) => Some(*i),
            FactValue::Float(f) => Some(*f as i64),
            _ => None,
        }
    }
    pub fn as_text(&self) -> Option<&str> {
        match self {
            FactValue::Text(s) => Some(s),
            _ => None,
        }
    }
}

impl fmt::Display for FactValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FactValue::Int(i) => write!(f, "{i}"),
            FactValue::Float(x) => write!(f, "{x}"),
            FactValue::Bool(b) => write!(f, "{b}"),
            FactValue::Text(s) => f.write_str(s),
        }
    }
}

impl From<i64> for FactValue {
    fn from(v: i64) -> Self {
        FactValue::Int(v)
    }
}
impl From<u64> for FactValue {
    fn from(v: u64) -> Self {
        FactValue::Int(v.min(i64::MAX as u64) as i64)
    }
}
impl From<f64> for FactValue {
    fn from(v: f64) -> Self {
        FactValue::Float(v)
    }
}
impl From<bool> for FactValue {
    fn from(v: bool) -> Self {
        FactValue::Bool(v)
    }
}
impl From<String> for FactValue {
    fn from(v: String) -> Self {
        FactValue::Text(v)
    }
}
impl From<&str> for FactValue {
    fn from(v: &str) -> Self {
        FactValue::Text(v.to_string())
    }
}

/// One typed thing the inputs tell us, with where it was read.
/// Names are dotted and stable once published (see `facts::CATALOG`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fact {
    pub name: String,
    pub value: FactValue,
    /// Path relative to the input the user gave.
    pub path: String,
    /// 1-based line, when the fact comes from a line of text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// The line's text (or a short description for binary sources), for citing.
    #[serde(skip)]
    pub text: String,
    /// The phase of the input it was read from (set by the analysis with `path`).
    #[serde(skip)]
    pub phase: Phase,
}

impl Fact {
    pub fn new(name: impl Into<String>, value: impl Into<FactValue>) -> Fact {
        Fact {
            name: name.into(),
            value: value.into(),
            path: String::new(),
            line: None,
            text: String::new(),
            phase: Phase::During,
        }
    }
    /// Attach provenance: the line number and the text it was read from.
    pub fn at(mut self, line: u64, text: &str) -> Fact {
        self.line = Some(line);
        self.text = text.trim_end().to_string();
        self
    }
    pub fn with_text(mut self, text: impl Into<String>) -> Fact {
        self.text = text.into();
        self
    }
}

/// A text for people in both report languages: every content text (a warning, a finding's
/// title or fix, a diff's label and headline, a rule's documentation) is one. Made once from
/// the same values, English and Chinese side by side, so nothing that builds one with
/// [`text!`] can leave out its Chinese; a text from a user's rule file may have none (`zh`
/// empty), and then reads in English in every language ([`Text::get`]). Analysis builds
/// these; only `report/` picks the language. In JSON a text is the pair of keys it has always
/// been, `name` and `name_zh` (the `keys` module). A catalog compiled into the binary (the
/// fact descriptions) holds `Text<&'static str>`: the same type, borrowed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Text<S = String> {
    pub en: S,
    /// Empty where no Chinese was given.
    pub zh: S,
}

impl<S: AsRef<str>> Text<S> {
    /// The text in `lang`: its Chinese where it has one, else its English.
    pub fn get(&self, lang: Lang) -> &str {
        match lang {
            Lang::Zh if !self.zh.as_ref().is_empty() => self.zh.as_ref(),
            _ => self.en.as_ref(),
        }
    }

    /// Each language's text through `f` (a placeholder filled alike in both); a missing
    /// Chinese stays missing.
    pub fn map(&self, f: impl Fn(&str) -> String) -> Text {
        let zh = self.zh.as_ref();
        Text {
            en: f(self.en.as_ref()),
            zh: if zh.is_empty() { String::new() } else { f(zh) },
        }
    }

    /// An owned copy (of a catalog's `Text<&'static str>`).
    pub fn owned(&self) -> Text {
        Text {
            en: self.en.as_ref().to_string(),
            zh: self.zh.as_ref().to_string(),
        }
    }
}

impl Text {
    /// A text in both languages.
    pub fn new(en: impl Into<String>, zh: impl Into<String>) -> Text {
        Text {
            en: en.into(),
            zh: zh.into(),
        }
    }

    /// A text that reads the same in every language: a number, a name, a quoted line (a
    /// computed value a fix template puts in either language).
    pub fn plain(s: impl Into<String>) -> Text {
        Text {
            en: s.into(),
            zh: String::new(),
        }
    }

    /// A text given in English, with its Chinese where one was given (a rule file's `_zh`
    /// keys are optional outside the built-in rules).
    pub fn given(en: impl Into<String>, zh: Option<impl Into<String>>) -> Text {
        Text {
            en: en.into(),
            zh: zh.map(Into::into).unwrap_or_default(),
        }
    }

    /// The Chinese, where one was given.
    pub fn zh(&self) -> Option<&str> {
        (!self.zh.is_empty()).then_some(self.zh.as_str())
    }

    /// Both languages, for a change made to each alike (redaction).
    pub fn each_mut(&mut self) -> impl Iterator<Item = &mut String> {
        [&mut self.en, &mut self.zh].into_iter()
    }

    /// `t` appended, each language its own (`t`'s English where it has no Chinese).
    pub fn push(&mut self, t: &Text) {
        self.en.push_str(&t.en);
        self.zh.push_str(t.get(Lang::Zh));
    }

    /// Several messages as one sentence, each language with its own separator.
    pub fn join(parts: &[Text], en: &str, zh: &str) -> Text {
        let side = |pick: fn(&Text) -> &str, sep| -> String {
            parts.iter().map(pick).collect::<Vec<_>>().join(sep)
        };
        Text {
            en: side(|t| &t.en, en),
            zh: side(|t| &t.zh, zh),
        }
    }

    /// The same message after a label in each language (`"NT_FILE: "`, `"NT_FILE："`), for
    /// a caller that says which part of an input the message is about.
    pub fn prefixed(self, en: &str, zh: &str) -> Text {
        Text {
            en: format!("{en}{}", self.en),
            zh: format!("{zh}{}", self.zh),
        }
    }
}

/// What is wrong with the Chinese twin `zh` of a catalog's English text `en` (the Xid actions,
/// the fact descriptions): empty, no Chinese in it, or the backticked spans (commands, file
/// and field names) not exactly those of the English. Empty when it is fine.
#[cfg(test)]
pub(crate) fn chinese_twin_faults(en: &str, zh: &str) -> Vec<String> {
    let spans = |s: &str| {
        let mut v: Vec<String> = s
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect();
        v.sort();
        v
    };
    let mut faults = Vec::new();
    if zh.trim().is_empty() {
        faults.push("the Chinese is empty".to_string());
    } else if !zh.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c)) {
        faults.push(format!("no Chinese in {zh:?}"));
    }
    if !zh.matches('`').count().is_multiple_of(2) {
        faults.push(format!("an unclosed backtick in {zh:?}"));
    }
    if spans(en) != spans(zh) {
        faults.push(format!(
            "backticked spans {:?} of the English became {:?}",
            spans(en),
            spans(zh)
        ));
    }
    faults
}

/// `text!("cannot read: {e}", "无法读取：{e}")`: a [`Text`], each language formatted like
/// `format!` with the same arguments (inline `{name}`s, or arguments after both strings,
/// which are evaluated once per language, so they must be plain values).
/// `text!("skipped {at}", "跳过了{at}"; at = place)`: after a `;`, named arguments that are
/// texts themselves, each put in its own language (its English where it has no Chinese).
macro_rules! text {
    ($en:literal, $zh:literal; $($name:ident = $t:expr),+ $(,)?) => {
        $crate::model::Text {
            en: format!($en $(, $name = $t.get($crate::model::Lang::En))+),
            zh: format!($zh $(, $name = $t.get($crate::model::Lang::Zh))+),
        }
    };
    ($en:literal, $zh:literal $(, $arg:expr)* $(,)?) => {
        $crate::model::Text {
            en: format!($en $(, $arg)*),
            zh: format!($zh $(, $arg)*),
        }
    };
}
pub(crate) use text;

/// How a [`Text`] field is written in JSON: as the pair of keys the reports have always had,
/// `name` (the English) and `name_zh` (the Chinese, left out where there is none). A field
/// is `#[serde(flatten, with = "crate::model::keys::name")]`; the field may be a `Text`, an
/// `Option<Text>` (`name: null` when absent) or a `Vec<Text>` (two arrays, `null` where an
/// item has no Chinese). Key names are facts of the JSON schema: one module per name.
pub(crate) mod keys {
    use super::Text;
    use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
    use serde::ser::{SerializeMap, Serializer};

    /// A field type that holds texts, written as its two keys.
    pub trait Field: Sized {
        fn write<M: SerializeMap>(&self, en: &str, zh: &str, map: &mut M) -> Result<(), M::Error>;
        /// From the two keys' values (`None` where a key is absent).
        fn read(en: Option<String>, zh: Option<String>) -> Option<Self>;
    }

    impl Field for Text {
        fn write<M: SerializeMap>(&self, en: &str, zh: &str, map: &mut M) -> Result<(), M::Error> {
            map.serialize_entry(en, &self.en)?;
            if let Some(z) = self.zh() {
                map.serialize_entry(zh, z)?;
            }
            Ok(())
        }
        fn read(en: Option<String>, zh: Option<String>) -> Option<Self> {
            Some(Text::given(en?, zh))
        }
    }

    impl Field for Option<Text> {
        fn write<M: SerializeMap>(&self, en: &str, zh: &str, map: &mut M) -> Result<(), M::Error> {
            match self {
                Some(t) => t.write(en, zh, map),
                None => map.serialize_entry(en, &None::<String>),
            }
        }
        fn read(en: Option<String>, zh: Option<String>) -> Option<Self> {
            Some(Text::read(en, zh))
        }
    }

    impl Field for Vec<Text> {
        fn write<M: SerializeMap>(&self, en: &str, zh: &str, map: &mut M) -> Result<(), M::Error> {
            let ens: Vec<&str> = self.iter().map(|t| t.en.as_str()).collect();
            let zhs: Vec<Option<&str>> = self.iter().map(Text::zh).collect();
            map.serialize_entry(en, &ens)?;
            map.serialize_entry(zh, &zhs)
        }
        fn read(_: Option<String>, _: Option<String>) -> Option<Self> {
            None
        }
    }

    pub fn write<F: Field, S: Serializer>(
        f: &F,
        en: &str,
        zh: &str,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        f.write(en, zh, &mut map)?;
        map.end()
    }

    pub fn read<'de, F: Field, D: Deserializer<'de>>(
        en: &'static str,
        zh: &'static str,
        d: D,
    ) -> Result<F, D::Error> {
        struct Pair(&'static str, &'static str);
        impl<'de> Visitor<'de> for Pair {
            type Value = (Option<String>, Option<String>);
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                write!(f, "`{}` and `{}`", self.0, self.1)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
                let (mut en, mut zh) = (None, None);
                while let Some(k) = m.next_key::<String>()? {
                    if k == self.0 {
                        en = m.next_value::<Option<String>>()?;
                    } else if k == self.1 {
                        zh = m.next_value::<Option<String>>()?;
                    } else {
                        m.next_value::<IgnoredAny>()?;
                    }
                }
                Ok((en, zh))
            }
        }
        let (e, z) = d.deserialize_map(Pair(en, zh))?;
        F::read(e, z).ok_or_else(|| serde::de::Error::missing_field(en))
    }

    /// One module per key name, for `#[serde(with = …)]`.
    macro_rules! names {
        ($($name:ident),+ $(,)?) => {$(
            pub mod $name {
                pub fn serialize<F: super::Field, S: serde::Serializer>(
                    f: &F,
                    s: S,
                ) -> Result<S::Ok, S::Error> {
                    super::write(f, stringify!($name), concat!(stringify!($name), "_zh"), s)
                }
                #[allow(dead_code)]
                pub fn deserialize<'de, F: super::Field, D: serde::Deserializer<'de>>(
                    d: D,
                ) -> Result<F, D::Error> {
                    super::read(stringify!($name), concat!(stringify!($name), "_zh"), d)
                }
            }
        )+};
    }
    names!(
        alternatives,
        fix,
        fixes,
        headline,
        lookalikes,
        message,
        next_time,
        title,
        warnings,
        what,
        why
    );
}

/// Something the tool could not read, or read only in part. Never fatal. Its message is in
/// English (`message`, the stable field) and in Chinese (`message_zh`), both always present.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Warning {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(flatten, with = "keys::message")]
    pub message: Text,
}

/// `path: message`, or the message alone when no input is named; in English (a report in
/// another language picks its text through `report::i18n::Tr`).
impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.path {
            Some(p) => write!(f, "{p}: {}", self.message.en),
            None => f.write_str(&self.message.en),
        }
    }
}

impl Warning {
    pub fn new(path: Option<&str>, mut message: Text) -> Warning {
        // Both languages always present: a message with no Chinese reads in English in both.
        if message.zh.is_empty() {
            message.zh = message.en.clone();
        }
        Warning {
            path: path.map(str::to_string),
            message,
        }
    }
}

/// Where a line came from and who said it, as far as its prefix and file name tell.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Attribution {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_rank: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Wall-clock time as `YYYY-MM-DDTHH:MM:SS[.fff]` when the line carries a full date,
    /// or seconds since boot for raw dmesg (`boot+1843.308145`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
}

impl Attribution {
    /// Takes from `other` each part this one lacks (rank, local rank, host, pid, time): what a
    /// weaker line adds to what a stronger one already said, never overriding it.
    pub fn fill_from(&mut self, other: Attribution) {
        self.rank = self.rank.or(other.rank);
        self.local_rank = self.local_rank.or(other.local_rank);
        self.host = self.host.take().or(other.host);
        self.pid = self.pid.or(other.pid);
        self.time = self.time.take().or(other.time);
    }
}

/// A closed vocabulary: an enum whose every value has one fixed spelling, used in rule files,
/// in the JSON report and for people. `ALL`, `as_str`, `parse`, `Display`, `Serialize` and
/// `Deserialize` come from the one table, so a spelling is written once. Values are ordered as their
/// spellings are (the order the strings they replaced had).
macro_rules! vocabulary {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $v:ident = $s:literal,)+ }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vm])* $v,)+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$v,)+];

            /// The spelling used in rule files, the JSON report and for people.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$v => $s,)+
                }
            }

            /// The value spelled `s`, if any.
            pub fn parse(s: &str) -> Option<$name> {
                $name::ALL.iter().copied().find(|v| v.as_str() == s)
            }

            /// Every spelling, comma-separated (for load errors that say what is valid).
            pub fn valid_values() -> String {
                $name::ALL
                    .iter()
                    .map(|v| v.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        }

        impl std::fmt::Display for $name {
            // `pad`, not `write_str`: widths and alignment apply as they did to the strings.
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.pad(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        // A misspelt value in a data file fails to load with every valid spelling named.
        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                $name::parse(&s).ok_or_else(|| {
                    serde::de::Error::custom(format!(
                        "{s:?} is not one of: {}",
                        $name::valid_values()
                    ))
                })
            }
        }

        impl PartialOrd for $name {
            fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(other))
            }
        }

        impl Ord for $name {
            fn cmp(&self, other: &Self) -> std::cmp::Ordering {
                self.as_str().cmp(other.as_str())
            }
        }
    };
}
pub(crate) use vocabulary;

/// A closed vocabulary whose every value also carries its action class and what it means.
/// Used once, for `Category`: its rows are the one place a category is described in code.
macro_rules! categories {
    ($(#[$m:meta])* $name:ident { $($v:ident = $s:literal, $action:ident, $meaning:literal;)+ }) => {
        vocabulary! {
            $(#[$m])*
            $name { $($v = $s,)+ }
        }

        impl $name {
            /// The category's action class (docs/categories.md's `action` column).
            pub fn action(self) -> Action {
                match self {
                    $($name::$v => Action::$action,)+
                }
            }

            /// What failed, in one line (docs/categories.md's `what failed` column).
            pub fn meaning(self) -> &'static str {
                match self {
                    $($name::$v => $meaning,)+
                }
            }
        }
    };
}

categories! {
    /// The fixed category vocabulary (docs/categories.md): one row per category, its spelling,
    /// its action class and what failed. `tests/docs.rs` checks each row against the table's.
    Category {
        ShmExhausted = "shm_exhausted", FixConfig,
            "shared memory (`/dev/shm`, or the IPC namespace's) was too small or filled up: \
             DataLoader workers killed by SIGBUS, NCCL or UCX unable to create their shared \
             segments, `SemLock` failing with ENOSPC";
        HostOom = "host_oom", FixConfig,
            "the host's or the container's memory ran out: the kernel OOM killer, a cgroup \
             `oom_kill`, Kubernetes `OOMKilled`, a rank ending with status 137";
        GpuOom = "gpu_oom", FixConfig,
            "the GPU (or another accelerator) had no memory left for an allocation";
        NcclTimeout = "nccl_timeout", RetryOrInvestigate,
            "a collective operation did not complete before the watchdog's timeout; most often \
             the consequence of one rank failing first";
        CollectiveMismatch = "collective_mismatch", FixCode,
            "the ranks disagreed on the collective they were running (a different operation, size \
             or order, typically from a collective inside a rank-dependent branch); timeouts \
             follow";
        NcclNetwork = "nccl_network", RetryElsewhere,
            "NCCL's transport failed: InfiniBand/RoCE or socket errors, connections reset by a \
             peer, remote-side errors";
        GpuHardwareXid = "gpu_hardware_xid", ReplaceHardware,
            "the NVIDIA driver reported an Xid event naming the hardware: a GPU fallen off the \
             bus, NVLink errors, GSP firmware errors";
        EccError = "ecc_error", ReplaceHardware,
            "uncorrectable ECC or HBM memory errors on the GPU, or a failed row remapping";
        CudaIllegalAccess = "cuda_illegal_access", FixCode,
            "a kernel accessed memory it must not: illegal address, misaligned address, \
             unspecified launch failure";
        DeviceSideAssert = "device_side_assert", FixCode,
            "an assertion inside a GPU kernel fired, typically an index out of range in an \
             embedding or a loss";
        CudaDriverMismatch = "cuda_driver_mismatch", FixEnvironment,
            "the CUDA runtime and the machine do not fit: a driver older than the runtime needs, \
             no kernel image built for this GPU, a CUDA library not found";
        DiskFull = "disk_full", FixConfig,
            "a disk (not `/dev/shm`) had no space left, usually while writing a checkpoint or a \
             cache";
        TooManyOpenFiles = "too_many_open_files", FixConfig,
            "the process hit its file-descriptor limit (EMFILE)";
        MemlockLimit = "memlock_limit", FixConfig,
            "the locked-memory limit was too low for RDMA memory registration";
        PortInUse = "port_in_use", FixConfig,
            "the rendezvous or master port was already taken on the host";
        RendezvousFailure = "rendezvous_failure", FixConfig,
            "the workers never assembled: the master could not be reached, was given the wrong \
             address, or the rendezvous timed out";
        DataloaderWorkerCrash = "dataloader_worker_crash", Investigate,
            "a DataLoader worker died and the inputs do not say why (when shared memory or the \
             OOM killer explains it, that category is reported instead)";
        SegfaultNative = "segfault_native", FixCode,
            "a native crash (SIGSEGV or SIGABRT) in compiled code: an extension, a driver \
             library, the interpreter";
        LossScaleOverflow = "loss_scale_overflow", FixConfig,
            "fp16 dynamic loss scaling collapsed to its minimum and training could not go on";
        NanLoss = "nan_loss", FixConfig,
            "the loss became NaN or infinite and the run stopped because of it";
        ConfigError = "config_error", FixConfig,
            "the launch or training configuration is invalid: batch sizes that do not multiply \
             out, missing arguments, a malformed config file";
        PreemptedOrTimeLimit = "preempted_or_time_limit", Retry,
            "the scheduler ended the run: a time limit, a preemption, an eviction, a SIGTERM from \
             outside";
        CheckpointError = "checkpoint_error", FixConfig,
            "a checkpoint was missing, corrupt or incompatible when loaded, or could not be saved";
        PythonException = "python_exception", FixCode,
            "an ordinary Python exception in the user's code that none of the categories above \
             explains";
        Other = "other", Investigate,
            "a failure that fits none of the categories above";
    }
}

vocabulary! {
    /// What to do about a failure: a category's action class (docs/categories.md), or `none` for a
    /// run that did not fail. Each maps to one documented exit status.
    Action {
        /// Infrastructure: rerunning may succeed.
        Retry = "retry",
        /// Rerun on other nodes (a network or node problem).
        RetryElsewhere = "retry-elsewhere",
        /// Usually a symptom: look for the rank that failed first, or rerun.
        RetryOrInvestigate = "retry-or-investigate",
        /// Rerunning unchanged fails again: change the configuration.
        FixConfig = "fix-config",
        /// Rerunning unchanged fails again: fix the environment (driver, libraries).
        FixEnvironment = "fix-environment",
        /// A bug in the training code.
        FixCode = "fix-code",
        /// Rerun elsewhere and take the node/GPU out of service.
        ReplaceHardware = "replace-hardware",
        /// Nothing says what to do: read the evidence.
        Investigate = "investigate",
        /// The run did not fail (never a category's action).
        None = "none",
    }
}

/// Exit statuses of `--exit-code action` (README.md "Exit statuses for automation").
pub(crate) mod action_exit {
    /// The run did not fail.
    pub const NO_FAILURE: i32 = 0;
    /// retry, retry-elsewhere, retry-or-investigate: infrastructure; rerunning may succeed.
    pub const RETRY: i32 = 10;
    /// replace-hardware: rerun elsewhere and take the node/GPU out of service.
    pub const REPLACE_HARDWARE: i32 = 11;
    /// fix-config, fix-environment: rerunning unchanged will fail again.
    pub const FIX_CONFIG: i32 = 12;
    /// fix-code: a bug in the training code.
    pub const FIX_CODE: i32 = 13;
    /// investigate, or a failure no rule explains.
    pub const INVESTIGATE: i32 = 14;
}

impl Action {
    /// The documented exit status of `--exit-code action` for this action.
    pub fn exit_status(self) -> i32 {
        match self {
            Action::Retry | Action::RetryElsewhere | Action::RetryOrInvestigate => {
                action_exit::RETRY
            }
            Action::ReplaceHardware => action_exit::REPLACE_HARDWARE,
            Action::FixConfig | Action::FixEnvironment => action_exit::FIX_CONFIG,
            Action::FixCode => action_exit::FIX_CODE,
            Action::Investigate => action_exit::INVESTIGATE,
            Action::None => action_exit::NO_FAILURE,
        }
    }

    /// A config, environment or code fix: the failure is not the hardware's.
    pub fn is_fix(self) -> bool {
        matches!(
            self,
            Action::FixConfig | Action::FixEnvironment | Action::FixCode
        )
    }
}

vocabulary! {
    /// What a report concludes about a run.
    Verdict {
        /// A root cause was found with enough confidence.
        Diagnosed = "diagnosed",
        /// Something failed and no rule explains it confidently.
        UnknownFailure = "unknown_failure",
        /// Nothing shows that the run failed.
        NoFailure = "no_failure",
    }
}

vocabulary! {
    /// The language a report is written in for people (`--lang`). Analysis keeps both
    /// languages' texts where they exist; only `report` picks one. JSON keys never change.
    Lang {
        En = "en",
        Zh = "zh",
    }
}

vocabulary! {
    /// A rule's life cycle (`status` in a rule file; `stable` when absent).
    RuleStatus {
        Stable = "stable",
        Preview = "preview",
        /// Kept so the code is never reused; never runs.
        Retired = "retired",
    }
}

/// "Seen before": what the failure history knows of a fingerprint (`history` in the JSON
/// report, `history show`). Filled by `history`, rendered by `report`; decides nothing.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
pub struct Seen {
    pub fingerprint: String,
    /// Distinct runs with this fingerprint (the current one included once recorded).
    pub count: u64,
    /// The most recent runs, newest first (at most `history::REPORT_RUNS` in a report).
    pub runs: Vec<SeenRun>,
    pub first_seen: Option<String>,
    pub last_seen: Option<String>,
    /// Every host these runs ran on, sorted.
    pub hosts: Vec<String>,
    /// The team's notes on this fingerprint, oldest first.
    pub notes: Vec<Note>,
    /// The run of this report, when it is in the history (not serialised).
    #[serde(skip)]
    pub this_run: Option<String>,
    /// When the history was asked (Unix seconds), for "3 h ago" (not serialised).
    #[serde(skip)]
    pub asked_at: i64,
}

#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
pub struct SeenRun {
    pub run_id: String,
    /// Time of failure from the logs, else when it was recorded (UTC, `…Z`).
    pub time: String,
    pub job: Option<String>,
    /// The host the failure started on, when known.
    pub host: Option<String>,
    pub verdict: String,
}

#[derive(Debug, Clone, Default, Serialize, serde::Deserialize, PartialEq)]
pub struct Note {
    pub text: String,
    pub author: String,
    /// UTC, `…Z`.
    pub time: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_join_with_each_languages_separator() {
        let parts = [text!("grew", "变大了"), text!("was deleted", "被删除")];
        let t = Text::join(&parts, "; then it ", "；随后又").prefixed("the file ", "文件");
        assert_eq!(t.en, "the file grew; then it was deleted");
        assert_eq!(t.zh, "文件变大了；随后又被删除");
    }

    #[test]
    fn a_chinese_twin_is_refused_when_empty_english_or_its_commands_changed() {
        let en = "Check `dmesg` for AER errors.";
        assert!(chinese_twin_faults(en, "在 `dmesg` 里查 AER 错误。").is_empty());
        assert!(!chinese_twin_faults(en, "").is_empty());
        assert!(!chinese_twin_faults(en, "Check `dmesg` for AER errors.").is_empty());
        assert!(!chinese_twin_faults(en, "在 `dmesg -T` 里查 AER 错误。").is_empty());
        assert!(!chinese_twin_faults(en, "查 AER 错误。").is_empty());
        assert!(!chinese_twin_faults(en, "在 `dmesg 里查 AER 错误。").is_empty());
    }

    #[test]
    fn text_formats_both_languages_from_the_same_values() {
        let (n, path) = (3u64, "logs/rank0.log");
        let t = text!("{n} lines of {path} lost", "{path} 丢失了 {n} 行");
        assert_eq!(t.en, "3 lines of logs/rank0.log lost");
        assert_eq!(t.zh, "logs/rank0.log 丢失了 3 行");
        let offset = 0x40u64;
        let t = text!("cut at {:#x}", "在 {:#x} 处截断", offset);
        assert_eq!(
            (t.en.as_str(), t.zh.as_str()),
            ("cut at 0x40", "在 0x40 处截断")
        );
        let t = text!("empty", "为空").prefixed("df: ", "df：");
        assert_eq!((t.en.as_str(), t.zh.as_str()), ("df: empty", "df：为空"));
        let w = Warning::new(Some("a.log"), text!("cannot read", "无法读取"));
        assert_eq!(w.to_string(), "a.log: cannot read");
        assert_eq!(
            serde_json::to_string(&w).unwrap(),
            r#"{"path":"a.log","message":"cannot read","message_zh":"无法读取"}"#
        );
    }

    /// A text field is written as the two keys the reports have always had, and read back
    /// from them: `name_zh` left out where there is no Chinese, `name: null` for an absent
    /// `Option<Text>`, two arrays for a `Vec<Text>`.
    #[test]
    fn a_text_is_its_two_json_keys_and_reads_back() {
        #[derive(Serialize, serde::Deserialize, Debug, PartialEq)]
        struct S {
            a: u8,
            #[serde(flatten, with = "keys::title")]
            title: Option<Text>,
            #[serde(flatten, with = "keys::what")]
            what: Text,
            z: u8,
        }
        let mut s = S {
            a: 1,
            title: Some(Text::new("T", "标题")),
            what: Text::given("W", None::<String>),
            z: 2,
        };
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(
            json,
            r#"{"a":1,"title":"T","title_zh":"标题","what":"W","z":2}"#
        );
        assert_eq!(serde_json::from_str::<S>(&json).unwrap(), s);
        s.title = None;
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(json, r#"{"a":1,"title":null,"what":"W","z":2}"#);
        assert_eq!(serde_json::from_str::<S>(&json).unwrap(), s);

        #[derive(Serialize)]
        struct V {
            #[serde(flatten, with = "keys::fixes")]
            fixes: Vec<Text>,
        }
        let v = V {
            fixes: vec![Text::new("f", "修"), Text::given("g", None::<&str>)],
        };
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"fixes":["f","g"],"fixes_zh":["修",null]}"#
        );
        assert_eq!(Text::given("W", None::<String>).get(Lang::Zh), "W");
        assert_eq!(Text::new("T", "标题").get(Lang::Zh), "标题");
        assert_eq!(Text::new("T", "标题").get(Lang::En), "T");
    }

    /// A text made of texts reads each part in its own language, an English-only part in
    /// English in both; a catalog's borrowed text reads like an owned one; the pair a finding
    /// still takes has no Chinese where the text has none.
    #[test]
    fn texts_inside_a_text_keep_their_language() {
        let at = text!("at byte {}", "第 {} 字节处", 7);
        let user = Text::given("a user's words", None::<String>);
        let t = text!("skipped {at} ({user})", "跳过了{at}（{user}）"; at = at, user = user);
        assert_eq!(t.en, "skipped at byte 7 (a user's words)");
        assert_eq!(t.zh, "跳过了第 7 字节处（a user's words）");
        const DOC: Text<&str> = Text {
            en: "size of the mount",
            zh: "挂载点的大小",
        };
        assert_eq!(DOC.get(Lang::Zh), "挂载点的大小");
        assert_eq!(DOC.owned(), Text::new("size of the mount", "挂载点的大小"));
        assert_eq!(t.zh(), Some("跳过了第 7 字节处（a user's words）"));
        assert_eq!(user.zh(), None);
        // A value the same in every language, appended to a text in both.
        let mut fix = Text::new("Set it to ", "设为 ");
        fix.push(&Text::plain("8 GiB"));
        fix.push(&Text::new(".", "。"));
        assert_eq!(fix, Text::new("Set it to 8 GiB.", "设为 8 GiB。"));
        assert_eq!(Text::plain("8 GiB").get(Lang::Zh), "8 GiB");
    }

    #[test]
    fn vocabularies_spell_and_parse_back_one_way() {
        for c in Category::ALL {
            assert_eq!(Category::parse(c.as_str()), Some(*c));
            assert_eq!(serde_json::to_string(c).unwrap(), format!("\"{c}\""));
            assert_ne!(c.action(), Action::None, "{c}: none is not an action class");
        }
        for a in Action::ALL {
            assert_eq!(Action::parse(a.as_str()), Some(*a));
        }
        assert_eq!(Category::parse("shm-exhausted"), None);
        assert_eq!(format!("{:<8}|", Verdict::Diagnosed), "diagnosed|");
        assert_eq!(format!("{:<8}|", RuleStatus::Retired), "retired |");
    }

    #[test]
    fn a_misspelt_value_does_not_deserialize_and_says_what_is_valid() {
        let e = serde_json::from_str::<Verdict>("\"diagnosd\"").unwrap_err();
        assert!(
            e.to_string()
                .contains("\"diagnosd\" is not one of: diagnosed, unknown_failure, no_failure"),
            "{e}"
        );
        assert_eq!(
            serde_json::from_str::<Category>("\"gpu_oom\"").unwrap(),
            Category::GpuOom
        );
    }

    #[test]
    fn values_order_as_their_spellings() {
        let mut by_enum = Verdict::ALL.to_vec();
        by_enum.sort();
        let mut by_str: Vec<&str> = Verdict::ALL.iter().map(|v| v.as_str()).collect();
        by_str.sort();
        assert_eq!(
            by_enum.iter().map(|v| v.as_str()).collect::<Vec<_>>(),
            by_str
        );
    }

    #[test]
    fn every_action_has_its_documented_exit_status() {
        let want = [
            (Action::Retry, 10),
            (Action::RetryElsewhere, 10),
            (Action::RetryOrInvestigate, 10),
            (Action::ReplaceHardware, 11),
            (Action::FixConfig, 12),
            (Action::FixEnvironment, 12),
            (Action::FixCode, 13),
            (Action::Investigate, 14),
            (Action::None, 0),
        ];
        assert_eq!(want.len(), Action::ALL.len());
        for (a, code) in want {
            assert_eq!(a.exit_status(), code, "{a}");
        }
    }
}

/// When an input was taken relative to the run: a snapshot from before it started describes
/// the machine, never the failure. Decided once, when the inputs are collected
/// (`inputs::phase_of`), and carried by every input and fact read from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    Before,
    #[default]
    During,
    After,
}

impl Phase {
    pub fn is_during(&self) -> bool {
        *self == Phase::During
    }
}
