//! Every cap trainwreck puts on what it reads, named in one place so the README, the code that
//! enforces each and the warning it gives agree. Each cap is reported with real numbers when
//! hit; none may drop data silently. Values only: the code that enforces a cap lives beside
//! its reader and refers here.

/// The longest line kept whole (also the line reader's buffer). A longer line is cut, and the
/// report says where and how long it really was.
pub(crate) const LINE_BYTES: usize = 1 << 20;

/// How far back a rule's `preceded_by` looks: its `within` lines, each starting at most this
/// many bytes before the line it qualifies (the same across chunk and split-range edges).
pub(crate) const LOOKBACK_BYTES: usize = 64 << 10;

/// The largest JSON document read whole (a torchelastic error file, a pod description): one
/// document has to be parsed at once, so its size is bounded.
pub(crate) const DOCUMENT_BYTES: usize = 8 << 20;

/// The largest Flight Recorder dump read (a 2000-entry trace is well under 10 MiB).
pub(crate) const FLIGHT_RECORDER_BYTES: usize = 64 << 20;

/// Decompressed bytes read from one compressed input, or from one member of an archive;
/// past this the rest is not read.
pub(crate) const GZIP_BYTES_PER_INPUT: u64 = 8 << 30;

/// Decompressed bytes read from all compressed inputs (and zip members) of one analysis together.
pub const GZIP_BYTES_TOTAL: u64 = 32 << 30;

/// A compressed input (or zip member) that inflates more than this many times its compressed size, once past
/// `GZIP_RATIO_AFTER` bytes, is a bomb (logs compress 5–30×; zeros 1000×): reading stops.
pub(crate) const GZIP_RATIO: u64 = 200;
pub(crate) const GZIP_RATIO_AFTER: u64 = 64 << 20;

/// A zip with no random access (read from a pipe or stdin, or a member of another archive)
/// is held in memory to reach its member list at its end; one bigger than this is refused.
pub const ZIP_SPOOL_BYTES: u64 = 256 << 20;

/// Members read from the archives of one input, the archives inside it included: each member
/// read costs its own record, so a zip of 300k tiny members would cost hundreds of MB. Past
/// this the rest are counted, not read, and the warning says how many.
pub const ARCHIVE_MEMBERS: usize = 50_000;

/// How deep archives inside archives are opened: a `.tar.gz` inside a `.zip` is read; an
/// archive inside that one is named in a warning, not read.
pub(crate) const ARCHIVE_NESTING: usize = 1;

/// The longest line `history import` reads (one exported run, its report included); a longer
/// one stops the import there, naming it.
pub const IMPORT_LINE_BYTES: usize = 16 << 20;

/// The longest text (a title, a note, a host) in one imported line: one hostile export must not
/// make every later `history list` of a shared database heavy.
pub(crate) const IMPORT_FIELD_BYTES: usize = 1 << 20;

/// Hits kept per rule signature and file; the rest are counted, not kept.
pub(crate) const HITS_PER_SIGNATURE: usize = 20;

/// Files read through symbolic links that leave a walked run directory, when
/// `--follow-links` allows that at all; links past this many are named and not followed.
pub const LINKED_FILES: usize = 10_000;

/// The compiled size of one rule regex (the scanner compiles with the same limit, so a
/// signature that loads always compiles).
pub(crate) const RULE_REGEX_BYTES: usize = 8 << 20;

/// The compiled size of all the regexes of the rules loaded with `--rules`, together: many
/// near the per-regex cap would otherwise cost gigabytes. Past it loading fails, naming the file.
pub const RULE_REGEX_TOTAL_BYTES: usize = 64 << 20;
