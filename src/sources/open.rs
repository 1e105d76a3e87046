//! Opening an input: the one place that opens a file or stdin, decompresses it (gzip, zstd, xz,
//! lz4: by magic, `elfcore::input::decoder`), sniffs the
//! head, detects the kind and says how the kind is read (lines with an optional fact parser,
//! a bounded document, a core read in place, or not at all with the reason). The analysis,
//! the work planner and the tests all go through here, so they read every input the same
//! way. It reads only the head; the caller streams the rest.

use crate::inputs::{Input, Source};
use crate::model::SourceKind;
use crate::sources::elfcore::input::{decoder, sniff};
use crate::sources::{FactParser, detect, fact_parser};
use std::io::{self, Read};
use std::path::PathBuf;

/// How an opened input is read.
pub enum How {
    /// Stream its lines through the scanner, and through this fact parser when the kind has one.
    Lines(Option<Box<dyn FactParser>>),
    /// A Flight Recorder dump: one bounded document.
    FlightRecorder,
    /// An ELF core, read in place with positioned reads (or streamed from its `.gz`).
    Core(PathBuf),
    /// Not read: why, when there is something to say (a capture's own manifest is silent).
    Skip(Option<String>),
}

/// An input, opened.
pub struct Opened {
    pub kind: SourceKind,
    /// The name the kind was detected from (the file name, without `.gz`).
    pub name: String,
    /// The whole (decompressed) content from its first byte.
    pub stream: Box<dyn Read + Send>,
    pub how: How,
}

/// Open `input`, decompress it, detect its kind and decide how it is read. `Err` is the
/// warning to report when it cannot be opened or read at all.
pub fn open(input: &Input) -> Result<Opened, String> {
    let path = input.display.as_str();
    let mut raw: Box<dyn Read + Send> = match &input.source {
        Source::Stdin => Box::new(io::stdin()),
        Source::File(p) => {
            Box::new(std::fs::File::open(p).map_err(|e| format!("cannot open: {e}"))?)
        }
    };
    let head = read_head(&mut raw).map_err(|e| format!("cannot read: {e}"))?;
    let file_name = path.rsplit('/').next().unwrap_or(path);
    let container = sniff(&head);
    let (stream, head, name): (Box<dyn Read + Send>, Vec<u8>, &str) =
        if let Some(z) = container.compression() {
            let mut dec = decoder(container, Box::new(io::Cursor::new(head).chain(raw)))
                .map_err(|e| format!("{z} data cannot be read: {e}"))?;
            let inner = read_head(&mut dec)
                .map_err(|e| format!("{z} data is corrupt or truncated before any text: {e}"))?;
            let bare = [".gz", ".zst", ".xz", ".lz4"]
                .iter()
                .find_map(|ext| file_name.strip_suffix(ext))
                .unwrap_or(file_name);
            (dec, inner, bare)
        } else {
            (raw, head, file_name)
        };
    let (kind, how) = classify(input, name, &head);
    Ok(Opened {
        kind,
        name: name.to_string(),
        stream: Box::new(io::Cursor::new(head).chain(stream)),
        how,
    })
}

/// The kind of the (decompressed) head and how that kind is read.
fn classify(input: &Input, name: &str, head: &[u8]) -> (SourceKind, How) {
    if detect::is_zstd(head) || detect::is_xz(head) {
        return (
            SourceKind::Binary,
            How::Skip(Some(
                "zstd/xz-compressed file: decompress it first (e.g. `zstd -d` / `xz -d`); not read"
                    .into(),
            )),
        );
    }
    let kind = detect::detect(name, head);
    if head.is_empty() {
        let why = if input.source == Source::Stdin {
            "stdin was empty"
        } else {
            "empty file"
        };
        return (kind, How::Skip(Some(why.into())));
    }
    let how = match kind {
        SourceKind::ElfCore => match &input.source {
            Source::File(p) => How::Core(p.clone()),
            Source::Stdin => How::Skip(Some(
                "an ELF core on stdin is not read: save it to a file and pass its path".into(),
            )),
        },
        SourceKind::FlightRecorder => How::FlightRecorder,
        SourceKind::Binary => How::Skip(Some(format!("{} file: not scanned", kind.as_str()))),
        // What a capture recorded about itself, listed in the inputs but not evidence.
        // trainwreck's own saved reports and people's notes: listed, never evidence.
        SourceKind::CaptureManifest
        | SourceKind::CaptureSamples
        | SourceKind::OwnReport
        | SourceKind::Notes => How::Skip(None),
        _ => How::Lines(fact_parser(kind, name)),
    };
    (kind, how)
}

/// The kind of a plain file whose byte ranges can be read on several threads at once (not
/// compressed, not binary, no fact parser that needs its lines in order); `None` otherwise.
pub fn splittable(input: &Input) -> Option<SourceKind> {
    let Source::File(p) = &input.source else {
        return None;
    };
    let head = read_head(&mut std::fs::File::open(p).ok()?).ok()?;
    if head.is_empty() || sniff(&head).compression().is_some() {
        return None;
    }
    let path = input.display.as_str();
    let name = path.rsplit('/').next().unwrap_or(path);
    let kind = detect::detect(name, &head);
    match kind {
        SourceKind::ElfCore | SourceKind::Binary | SourceKind::FlightRecorder => None,
        k if !k.is_scanned() => None,
        _ if fact_parser(kind, name).is_some() => None,
        _ => Some(kind),
    }
}

/// Whether a file of this name is probably read line by line by a fact parser (dmesg,
/// snapshots), from its name alone: for ordering the work by cost, never for reading it.
pub fn parsed_by_name(display: &str) -> bool {
    let name = display.rsplit('/').next().unwrap_or(display);
    fact_parser(detect::detect(name, b""), name).is_some()
}

fn read_head(r: &mut dyn Read) -> io::Result<Vec<u8>> {
    let mut head = vec![0u8; detect::SNIFF_BYTES];
    let mut n = 0;
    while n < head.len() {
        match r.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    head.truncate(n);
    Ok(head)
}
