//! Archives as inputs: a tar (plain or compressed: the stream `open` decompressed) or a zip,
//! walked member by member and each member handed out as a stream, never extracted to disk.
//! Recognised by magic, not by name. What the walk could not read (a truncated or damaged
//! archive, a link, an encrypted member) is said with the member it concerns; the walk goes
//! on where it can and stops with a sentence saying where it stopped; members past
//! `limits::ARCHIVE_MEMBERS` are counted, not handed out (a zip's member list past them is
//! walked, not held); a sparse member's holes are dropped, never scanned, and counted in the
//! total cap. Reads nothing but the archive; detecting and analysing a member is the caller's
//! (through `open::open_member`).

use crate::model::{Text, text};
use crate::sources::open::{GzipCap, Inflated};
use std::cell::Cell;
use std::io::{self, Read, Seek};
use std::rc::Rc;

/// What a zip reader needs: its central directory is at the end.
pub trait ReadSeek: Read + Seek {
    /// The bytes of it held in memory (`spool`), counted against the zips inside it.
    fn held(&self) -> u64 {
        0
    }
}
impl ReadSeek for std::fs::File {}
impl<T: ReadSeek + ?Sized> ReadSeek for &mut T {
    fn held(&self) -> u64 {
        (**self).held()
    }
}
impl<T: ReadSeek + ?Sized> ReadSeek for Box<T> {
    fn held(&self) -> u64 {
        (**self).held()
    }
}

/// A zip held in memory (`spool`).
pub struct Spooled(io::Cursor<Vec<u8>>);

impl Read for Spooled {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

impl Seek for Spooled {
    fn seek(&mut self, to: io::SeekFrom) -> io::Result<u64> {
        self.0.seek(to)
    }
}

impl ReadSeek for Spooled {
    fn held(&self) -> u64 {
        self.0.get_ref().len() as u64
    }
}

/// A POSIX (`ustar\0`) or GNU (`ustar  `) tar header: the magic at offset 257 of the first
/// 512-byte block.
pub(crate) fn is_tar(head: &[u8]) -> bool {
    head.len() >= 512 && &head[257..262] == b"ustar"
}

/// A zip's first local file header (or the end record of an empty zip).
pub(crate) fn is_zip(head: &[u8]) -> bool {
    head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06")
}

/// The head of a PyTorch checkpoint (`torch.save` writes a zip whose first member is
/// `<name>/data.pkl`: `training_args.bin`, `optimizer.pt` in every run's output directory):
/// tensors, not logs, so it is one binary input, not a walk over its members, once its member
/// list confirms it (`is_torch_checkpoint`).
pub(crate) fn is_torch_save(head: &[u8]) -> bool {
    if !head.starts_with(b"PK\x03\x04") || head.len() < 30 {
        return false;
    }
    // `torch.save` stores its members uncompressed (to map tensors in place); a zip a person
    // made of a run directory deflates them, `data.pkl` first or not, and is read as an archive.
    if u16::from_le_bytes([head[8], head[9]]) != 0 {
        return false;
    }
    let len = u16::from_le_bytes([head[26], head[27]]) as usize;
    head.get(30..30 + len)
        .is_some_and(|name| name == b"data.pkl" || name.ends_with(b"/data.pkl"))
}

/// Whether a zip whose head looks like `torch.save`'s (`is_torch_save`) has the rest of a
/// checkpoint's structure too: every member under the first member's directory, among them a
/// `version` record, and each one of the names `torch.save` (or a TorchScript archive) writes
/// there: `data.pkl`, `data/<n>` (the tensors), `version`, `.format_version`, `byteorder`,
/// `.storage_alignment`, `.data/…`, `constants.pkl`, `code/…`, `extra/…`. A zip of a run
/// directory whose first member is a `data.pkl` (made with `zip -D`, stored) is an archive of
/// logs, not a checkpoint. Reads only the member list, up to `limits::ARCHIVE_MEMBERS` files
/// of it; leaves `r` at its start.
pub(crate) fn is_torch_checkpoint(r: &mut dyn ReadSeek) -> bool {
    let known = {
        static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
        RE.get_or_init(|| {
            regex::Regex::new(
                r"^(data\.pkl|data/\d+|version|\.format_version|byteorder|\.storage_alignment|\.data/.+|constants\.pkl|code/.*|extra/.*)$",
            )
            .expect("torch member regex")
        })
    };
    // Each name in list order: the first must be `<dir>/data.pkl`, every other one of the
    // names `torch.save` writes under that directory. Returns whether to go on.
    let (mut dir, mut version, mut fits, mut files) = (None::<String>, false, true, 0);
    let mut check = |name: &str| {
        let rest = match &dir {
            None => name.strip_suffix("data.pkl").map(|d| {
                dir = Some(d.to_string());
                "data.pkl"
            }),
            Some(d) => name.strip_prefix(d.as_str()),
        };
        fits = rest.is_some_and(|rest| known.is_match(rest));
        version |= rest.is_some_and(|rest| rest == "version" || rest == ".format_version");
        files += usize::from(!name.ends_with('/'));
        fits && files < crate::limits::ARCHIVE_MEMBERS
    };
    // The member list is walked record by record up to the member cap, as an archive's is,
    // keeping nothing per member: a list of millions is not held to decide what the file is.
    // A list with no end record, or not where its end record says, is no checkpoint: it is
    // then read as a zip, whose reader says what is wrong with it.
    let walked = list_at(&mut *r).and_then(|(start, count)| {
        walk_list(&mut *r, start, count, |name, _| {
            check(&String::from_utf8_lossy(name))
        })
    });
    let _ = r.seek(io::SeekFrom::Start(0));
    walked.is_some() && fits && version && dir.is_some()
}

/// Hold a zip that has no random access (read from a pipe, or a member of another archive)
/// in memory, up to `limits::ZIP_SPOOL_BYTES` in all: `held` is what the archive it is in
/// holds already (a zip in a zip read from a pipe), so the two together stay under the one
/// cap. A bigger one is refused with the reason.
pub(crate) fn spool(mut r: impl Read, held: u64) -> Result<Spooled, Text> {
    use crate::limits::ZIP_SPOOL_BYTES;
    let room = ZIP_SPOOL_BYTES.saturating_sub(held);
    let mut buf = Vec::new();
    match (&mut r).take(room + 1).read_to_end(&mut buf) {
        Ok(_) if buf.len() as u64 > room && held > 0 => Err(text!(
            "a zip read from a pipe or from inside another archive is held in memory to find its member list, and this one, with the zip it is in ({held} bytes held already), is over limits::ZIP_SPOOL_BYTES ({ZIP_SPOOL_BYTES} bytes in all): not read; extract it and pass its path",
            "从管道或另一个归档里读到的 zip 要整个放进内存才能找到成员列表，而这个 zip 加上它所在的 zip（已占用 {held} 字节）超过了 limits::ZIP_SPOOL_BYTES（合计 {ZIP_SPOOL_BYTES} 字节）：未读取；请先解压出来，再传入它的路径"
        )),
        Ok(_) if buf.len() as u64 > room => Err(text!(
            "a zip read from a pipe or from inside another archive is held in memory to find its member list, and this one is over limits::ZIP_SPOOL_BYTES ({ZIP_SPOOL_BYTES} bytes): not read; save it to a file and pass its path",
            "从管道或另一个归档里读到的 zip 要整个放进内存才能找到成员列表，而这个 zip 超过了 limits::ZIP_SPOOL_BYTES（{ZIP_SPOOL_BYTES} 字节）：未读取；请先存成文件，再传入它的路径"
        )),
        Ok(_) => Ok(Spooled(io::Cursor::new(buf))),
        Err(e) => {
            let n = buf.len();
            Err(text!(
                "zip cannot be read after {n} bytes: {e}; not read",
                "zip 读到 {n} 字节后无法继续读取：{e}；未读取"
            ))
        }
    }
}

/// One member of an archive, being read.
pub struct Member<'r> {
    /// Its path inside the archive, as the archive names it (without a leading `./` or `/`).
    pub name: String,
    /// Its size once decompressed, as the archive's header says.
    pub size: u64,
    /// Its content, under the per-member decompression cap.
    pub reader: Box<dyn Read + 'r>,
    /// Why the per-member cap stopped the read, once it has.
    pub cap: std::sync::Arc<crate::sources::open::GzipState>,
    /// Bytes the archive it is in holds in memory (`spool`): a zip member spools within
    /// what is left of the cap.
    pub held: u64,
}

impl<'r> Member<'r> {
    /// A member read through `cap`, which says afterwards whether it stopped the read.
    fn capped<R: Read + 'r>(name: &str, size: u64, cap: GzipCap<R>, held: u64) -> Member<'r> {
        let state = cap.state();
        Member {
            name: name.to_string(),
            size,
            reader: Box::new(cap),
            cap: state,
            held,
        }
    }
}

/// Something the walk has to say: about a member (by its name in the archive) or, with no
/// name, about the archive itself.
pub type Note = (Option<String>, Text);

fn clean(name: &str) -> String {
    let n = name.trim_start_matches("./").trim_start_matches('/');
    n.to_string()
}

/// A member's reader that remembers how many bytes it gave and whether its stream ended
/// before the size the header promised (a truncated archive).
/// Counts the bytes read from an archive into the counter of the member being read (set
/// per member), so a member's compressed size is what was really read for it, never what
/// its header claims.
struct ReadCount<R> {
    inner: R,
    to: Rc<std::cell::RefCell<std::sync::Arc<std::sync::atomic::AtomicU64>>>,
}

impl<R: Read> Read for ReadCount<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let k = self.inner.read(buf)?;
        self.to
            .borrow()
            .fetch_add(k as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(k)
    }
}

impl<R: Seek> Seek for ReadCount<R> {
    fn seek(&mut self, to: io::SeekFrom) -> io::Result<u64> {
        self.inner.seek(to)
    }
}

/// A fresh counter for the next member's bytes.
fn next_member(
    to: &Rc<std::cell::RefCell<std::sync::Arc<std::sync::atomic::AtomicU64>>>,
) -> std::sync::Arc<std::sync::atomic::AtomicU64> {
    let c = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    *to.borrow_mut() = c.clone();
    c
}

struct Measured<R> {
    inner: R,
    got: Rc<Cell<u64>>,
}

impl<R: Read> Read for Measured<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let k = self.inner.read(buf)?;
        self.got.set(self.got.get() + k as u64);
        Ok(k)
    }
}

thread_local! {
    /// Members the input being read may still hand out (`limits::ARCHIVE_MEMBERS`), shared by
    /// the archives nested in it; `None` outside an archive walk. One input is read on one
    /// thread, start to end, so the count (and which members are read) never depends on
    /// other threads.
    static MEMBERS_LEFT: Cell<Option<usize>> = const { Cell::new(None) };
}

/// The member budget of one walk: the input's (an outer walk starts it, a nested one shares
/// it). `take` says whether one more member may be read.
struct Budget {
    owner: bool,
}

impl Budget {
    fn enter() -> Budget {
        let owner = MEMBERS_LEFT.with(|m| match m.get() {
            Some(_) => false,
            None => {
                m.set(Some(crate::limits::ARCHIVE_MEMBERS));
                true
            }
        });
        Budget { owner }
    }

    fn take(&self) -> bool {
        MEMBERS_LEFT.with(|m| match m.get() {
            Some(0) => false,
            Some(n) => {
                m.set(Some(n - 1));
                true
            }
            None => true,
        })
    }
}

impl Drop for Budget {
    fn drop(&mut self) {
        if self.owner {
            MEMBERS_LEFT.with(|m| m.set(None));
        }
    }
}

/// The note for members not read past the member cap: how many, and which cap.
fn over_member_cap(format: &str, read: usize, skipped: usize) -> Note {
    let cap = crate::limits::ARCHIVE_MEMBERS;
    (
        None,
        text!(
            "{format} archive: {skipped} members were not read, past the cap of {cap} members per input (limits::ARCHIVE_MEMBERS, nested archives included); {read} of this archive's members were read",
            "{format} 归档：有 {skipped} 个成员未读取，超过了每个输入 {cap} 个成员的上限（limits::ARCHIVE_MEMBERS，含嵌套归档）；本归档读取了 {read} 个成员"
        ),
    )
}

/// The warning for an archive that stops being readable: where (after which member), why,
/// and that what came before it was analysed.
fn cut_short(format: &str, last: Option<&str>, e: &dyn std::fmt::Display) -> Text {
    let (at, at_zh) = match last {
        Some(n) => (format!("after the member {n}"), format!("在成员 {n} 之后")),
        None => (
            "at its first member".to_string(),
            "从第一个成员起就".to_string(),
        ),
    };
    text!(
        "{format} archive unreadable {at} ({e}): the members before that point were analysed, the rest of the archive was not read",
        "{format} 归档{at_zh}无法读取（{e}）：此前的成员已分析，归档的其余部分未读取"
    )
}

fn short_note(name: &str, got: u64, size: u64) -> Note {
    (
        Some(name.to_string()),
        text!(
            "the archive ends inside this member: {got} of its {size} bytes were read (a truncated archive); what was read is analysed",
            "归档在这个成员中间就结束了：只读到它 {size} 字节中的 {got} 字节（归档被截断）；已读到的部分照常分析"
        ),
    )
}

/// What a sparse member's holes came to: the bytes dropped, and whether the analysis's total
/// cap stopped the member inside a hole.
#[derive(Clone, Default)]
struct HolesSkipped {
    dropped: Rc<Cell<u64>>,
    capped: Rc<Cell<bool>>,
}

impl HolesSkipped {
    fn note(&self) -> Option<Text> {
        let n = self.dropped.get();
        let cap = crate::limits::GZIP_BYTES_TOTAL;
        if self.capped.get() {
            Some(text!(
                "sparse member: {n} bytes of its holes (zeros the archive's sparse map lists, not stored) were skipped before the cap on all compressed inputs together (limits::GZIP_BYTES_TOTAL, {cap} bytes) stopped it; the rest of the member is not analysed",
                "稀疏成员：跳过了 {n} 字节的空洞（归档的稀疏映射列出的零字节，并未存储），之后达到所有压缩输入合计的上限（limits::GZIP_BYTES_TOTAL，{cap} 字节）而停止；成员的其余部分未分析"
            ))
        } else if n > 0 {
            Some(text!(
                "sparse member: {n} bytes of holes (zeros the archive's sparse map lists, not stored) were skipped, not scanned; only its stored data is",
                "稀疏成员：跳过了 {n} 字节的空洞（归档的稀疏映射列出的零字节，并未存储），未扫描；只扫描其存储的数据"
            ))
        } else {
            None
        }
    }
}

/// A GNU sparse member's stored data alone. The tar reader hands out each hole as reads of
/// zeros that move nothing in the archive (`read` is the archive's byte count for this
/// member): such reads are dropped here, never scanned, and counted in the analysis's total,
/// which stops them (`limits::GZIP_BYTES_TOTAL`) as it stops inflating.
struct SparseData<R> {
    inner: R,
    read: std::sync::Arc<std::sync::atomic::AtomicU64>,
    total: Inflated,
    holes: HolesSkipped,
}

impl<R: Read> Read for SparseData<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        use std::sync::atomic::Ordering::Relaxed;
        loop {
            let before = self.read.load(Relaxed);
            let k = self.inner.read(buf)?;
            if k == 0 || self.read.load(Relaxed) != before {
                return Ok(k);
            }
            // Of the read that reaches the cap, only what was left of it counts as skipped:
            // what a member says it skipped never passes the cap, whatever the read's size.
            let was = self.total.fetch_add(k as u64, Relaxed);
            let left = crate::limits::GZIP_BYTES_TOTAL.saturating_sub(was);
            self.holes
                .dropped
                .set(self.holes.dropped.get() + left.min(k as u64));
            if was + k as u64 >= crate::limits::GZIP_BYTES_TOTAL {
                self.holes.capped.set(true);
                return Ok(0);
            }
        }
    }
}

/// Walk a tar stream, calling `each` with every regular file in archive order. Returns what
/// the walk has to say (links, special files, where a damaged archive stopped).
/// `outer` is the cap on the stream's decompression, when it is compressed: a member cut
/// short by it is that cap's warning (said by the caller), not a truncated archive.
pub(crate) fn tar_members(
    r: impl Read,
    outer: Option<&crate::sources::open::GzipState>,
    total: &Inflated,
    each: &mut dyn FnMut(Member<'_>),
) -> Vec<Note> {
    let mut notes = Vec::new();
    let to = Rc::new(std::cell::RefCell::new(std::sync::Arc::default()));
    let mut ar = tar::Archive::new(ReadCount {
        inner: r,
        to: to.clone(),
    });
    let entries = match ar.entries() {
        Ok(e) => e,
        Err(e) => {
            notes.push((
                None,
                text!("tar archive cannot be read: {e}", "无法读取 tar 归档：{e}"),
            ));
            return notes;
        }
    };
    let budget = Budget::enter();
    let (mut read, mut skipped) = (0usize, 0usize);
    let mut last: Option<String> = None;
    for entry in entries {
        let mut entry = match entry {
            Ok(e) => e,
            Err(e) => {
                notes.push((None, cut_short("tar", last.as_deref(), &e)));
                break;
            }
        };
        let name = clean(&String::from_utf8_lossy(&entry.path_bytes()));
        last = Some(name.clone());
        let t = entry.header().entry_type();
        if t.is_dir() || t.is_pax_global_extensions() || t.is_pax_local_extensions() {
            continue;
        }
        if t.is_symlink() || t.is_hard_link() {
            let to = entry
                .link_name_bytes()
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default();
            notes.push((
                Some(name),
                text!(
                    "a link in the archive (to {to}): not followed",
                    "归档中的链接（指向 {to}）：不跟随"
                ),
            ));
            continue;
        }
        if !(t.is_file() || t.is_contiguous() || t.is_gnu_sparse()) {
            notes.push((
                Some(name),
                text!(
                    "not a regular file (FIFO, device or other special member): skipped",
                    "不是普通文件（而是 FIFO、设备或其他特殊成员）：已跳过"
                ),
            ));
            continue;
        }
        // Past the member cap the rest are counted (their headers walked), not read.
        if skipped > 0 || !budget.take() {
            skipped += 1;
            continue;
        }
        read += 1;
        let size = entry.size();
        let got = Rc::new(Cell::new(0));
        let measured = Measured {
            inner: &mut entry,
            got: got.clone(),
        };
        let sparse = t.is_gnu_sparse().then(HolesSkipped::default);
        if let Some(holes) = &sparse {
            // A sparse member's holes are zeros the tar reader makes, not bytes of the
            // archive: they are dropped before the scan and counted in the analysis's total
            // (making them costs too); its data is capped as an inflated stream's bytes are.
            let compressed = next_member(&to);
            let data = SparseData {
                inner: measured,
                read: compressed.clone(),
                total: total.clone(),
                holes: holes.clone(),
            };
            each(Member::capped(
                &name,
                size,
                GzipCap::new(data, compressed, "member", total),
                0,
            ));
        } else {
            each(Member::capped(&name, size, GzipCap::member(measured), 0));
        }
        if let Some(note) = sparse.as_ref().and_then(HolesSkipped::note) {
            notes.push((Some(name.clone()), note));
        }
        if outer.and_then(|o| o.hit()).is_some() {
            break;
        }
        // A sparse member's rest is not read here: that would make its holes (gigabytes of
        // zeros from a few bytes of header). The walk's next header skips its stored data,
        // and a truncated archive is said there.
        if sparse.is_some() {
            continue;
        }
        // Read the rest (what the reader of this kind did not need) to see whether it is there.
        let rest = io::copy(&mut (&mut entry).take(size), &mut io::sink()).unwrap_or(0);
        let total = got.get() + rest;
        if total < size {
            if outer.and_then(|o| o.hit()).is_none() {
                notes.push(short_note(&name, total, size));
            }
            break;
        }
    }
    if skipped > 0 {
        notes.push(over_member_cap("tar", read, skipped));
    }
    notes
}

/// Walk a zip through its central directory, calling `each` with every file in the
/// directory's order. A zip whose central directory cannot be read (cut short: it is at the
/// end), or lists nothing while the archive starts with a member, is walked from its local
/// headers instead, up to where it stops.
/// Its members' decompression is counted in the analysis's `total`.
pub(crate) fn zip_members(
    mut r: impl ReadSeek,
    total: &Inflated,
    each: &mut dyn FnMut(Member<'_>),
) -> Vec<Note> {
    let mut notes = Vec::new();
    let budget = Budget::enter();
    let held = r.held();
    // A member list longer than the members this input may still read: only its head is
    // parsed (the zip reader keeps a record per listed member), the rest counted as it streams.
    let left = MEMBERS_LEFT.with(|m| m.get()).unwrap_or(usize::MAX);
    let head = list_head(&mut r, left);
    let _ = r.seek(io::SeekFrom::Start(0));
    let mut r = Listed {
        inner: r,
        head: head.as_ref().map(|h| (h.end, h.record)),
        at: 0,
    };
    let to = Rc::new(std::cell::RefCell::new(std::sync::Arc::default()));
    let counted = ReadCount {
        inner: &mut r,
        to: to.clone(),
    };
    let mut z = match zip::ZipArchive::new(counted) {
        Ok(z) => z,
        Err(e) => {
            notes.push((
                None,
                text!(
                    "zip member list (its central directory, at the end) cannot be read ({e}): members are read from the start up to where the archive stops",
                    "无法读取 zip 末尾的中央目录（成员列表）：{e}；改为从头依次读取成员，直到归档中断处"
                ),
            ));
            if r.seek(io::SeekFrom::Start(0)).is_ok() {
                let mut r = io::BufReader::new(&mut r);
                zip_stream_members(&mut r, held, total, &budget, each, &mut notes);
            }
            return notes;
        }
    };
    // A member list that lists nothing while members lie before it (an end record whose
    // entry count was zeroed or cut): the members are read from their own headers.
    if z.is_empty() {
        drop(z);
        let mut magic = [0u8; 4];
        let local = r.seek(io::SeekFrom::Start(0)).is_ok()
            && r.read_exact(&mut magic).is_ok()
            && &magic == b"PK\x03\x04"
            && r.seek(io::SeekFrom::Start(0)).is_ok();
        if local {
            notes.push((
                None,
                text!(
                    "zip member list (its central directory, at the end) lists no files, yet the archive holds members: they are read from their own headers",
                    "zip 末尾的中央目录（成员列表）没有列出任何文件，但归档里有成员：改为按各成员自己的头依次读取"
                ),
            ));
            let mut r = io::BufReader::new(&mut r);
            zip_stream_members(&mut r, held, total, &budget, each, &mut notes);
        }
        return notes;
    }
    // Entries that share compressed data, or claim more of it than lies before the member
    // list, are how a small zip makes a huge amount of work: such a zip is not read.
    if z.has_overlapping_files().unwrap_or(true) {
        notes.push((
            None,
            text!(
                "zip entries overlap or claim more compressed data than the archive holds (a decompression-bomb shape): not read",
                "zip 的成员互相重叠，或声称的压缩数据比归档实际拥有的多（解压炸弹的构造）：未读取"
            ),
        ));
        return notes;
    }
    let is_dir = |z: &zip::ZipArchive<_>, i| {
        z.name_for_index(i)
            .is_some_and(|n| n.is_ok_and(|n| n.ends_with('/')))
    };
    for i in 0..z.len() {
        // Past the member cap the rest are counted from the member list, not read.
        if !is_dir(&z, i) && !budget.take() {
            let read = (0..i).filter(|&k| !is_dir(&z, k)).count();
            let skipped = (i..z.len()).filter(|&k| !is_dir(&z, k)).count();
            notes.push(over_member_cap("zip", read, skipped));
            break;
        }
        let name = z
            .name_for_index(i)
            .and_then(|n| n.ok().map(|n| clean(&n)))
            .unwrap_or_else(|| format!("#{i}"));
        let read = next_member(&to);
        let file = match z.by_index(i) {
            Ok(f) => f,
            Err(e) => {
                notes.push((
                    Some(name),
                    text!(
                        "member cannot be read ({e}): skipped",
                        "无法读取该成员（{e}）：已跳过"
                    ),
                ));
                continue;
            }
        };
        zip_one(file, read, held, total, each, &mut notes);
    }
    if let Some(h) = head {
        notes.push(over_member_cap("zip", h.read, h.skipped));
    }
    notes
}

/// The head of a zip's member list that holds the members still to be read: where it ends
/// (the archive is seen to end there, with `record`, an end record listing only the head),
/// and how many files are in it and after it.
struct ListHead {
    end: u64,
    record: [u8; 22],
    read: usize,
    skipped: usize,
}

/// Where a zip's member list starts and how many records it has, from its end record (or its
/// Zip64 end record, which the locator just before the end record points at). `None` when no
/// end record is found or the Zip64 records are not where they are said to be.
fn list_at(r: &mut dyn ReadSeek) -> Option<(u64, u64)> {
    let u16_at = |b: &[u8], i: usize| u16::from_le_bytes([b[i], b[i + 1]]) as u64;
    let u32_at = |b: &[u8], i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap()) as u64;
    let u64_at = |b: &[u8], i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
    let len = r.seek(io::SeekFrom::End(0)).ok()?;
    let back = len.min(22 + 65535 + 20);
    r.seek(io::SeekFrom::Start(len - back)).ok()?;
    let mut tail = vec![0u8; back as usize];
    r.read_exact(&mut tail).ok()?;
    let at = (0..tail.len().saturating_sub(21))
        .rev()
        .find(|&i| tail[i..].starts_with(b"PK\x05\x06"))?;
    let end = &tail[at..];
    let (count, start) = (u16_at(end, 10), u32_at(end, 16));
    if count != 0xFFFF && start != 0xFFFF_FFFF {
        return Some((start, count));
    }
    let loc = tail.get(at.checked_sub(20)?..at)?;
    if !loc.starts_with(b"PK\x06\x07") {
        return None;
    }
    r.seek(io::SeekFrom::Start(u64_at(loc, 8))).ok()?;
    let mut z64 = [0u8; 56];
    r.read_exact(&mut z64).ok()?;
    if !z64.starts_with(b"PK\x06\x06") {
        return None;
    }
    Some((u64_at(&z64, 48), u64_at(&z64, 32)))
}

/// Walk `count` records of the member list that starts at `start`, keeping nothing per
/// member: `each` gets a record's name and the offset just past the record, and returns
/// whether to go on. Stops early at a record that is not one (a list not where its end record
/// says); `None` when a record is cut short.
fn walk_list(
    r: &mut dyn ReadSeek,
    start: u64,
    count: u64,
    mut each: impl FnMut(&[u8], u64) -> bool,
) -> Option<()> {
    let u16_at = |b: &[u8], i: usize| u16::from_le_bytes([b[i], b[i + 1]]) as u64;
    r.seek(io::SeekFrom::Start(start)).ok()?;
    let mut list = io::BufReader::new(r);
    let mut pos = start;
    let mut fixed = [0u8; 46];
    let mut name = Vec::new();
    for _ in 0..count {
        if list.read_exact(&mut fixed).is_err() || !fixed.starts_with(b"PK\x01\x02") {
            break;
        }
        let (n, rest) = (u16_at(&fixed, 28), u16_at(&fixed, 30) + u16_at(&fixed, 32));
        name.resize(n as usize, 0);
        list.read_exact(&mut name).ok()?;
        io::copy(&mut (&mut list).take(rest), &mut io::sink()).ok()?;
        pos += 46 + n + rest;
        if !each(&name, pos) {
            break;
        }
    }
    Some(())
}

/// The member list's head holding `left` files, when the list has more than that: its end
/// record (or its Zip64 end record) is read for where the list is, then the list is walked
/// record by record, keeping nothing per member. `None` when the list fits, or is not where
/// its end record says (the zip reader then reads it whole, or falls back to local headers).
fn list_head(r: &mut dyn ReadSeek, left: usize) -> Option<ListHead> {
    let (start, count) = list_at(r)?;
    if count <= left as u64 {
        return None;
    }
    let (mut records, mut files) = (0u64, 0usize);
    let (mut cut, mut cut_records) = (None, 0u64);
    walk_list(r, start, count, |name, pos| {
        records += 1;
        if !name.ends_with(b"/") {
            files += 1;
            if files == left {
                (cut, cut_records) = (Some(pos), records);
            }
        }
        true
    })?;
    let end_at = cut?;
    // The head is listed by a plain end record: it must fit one.
    if cut_records > 0xFFFF || end_at > 0xFFFF_FFFF {
        return None;
    }
    let mut record = [0u8; 22];
    record[..4].copy_from_slice(b"PK\x05\x06");
    record[8..10].copy_from_slice(&(cut_records as u16).to_le_bytes());
    record[10..12].copy_from_slice(&(cut_records as u16).to_le_bytes());
    record[12..16].copy_from_slice(&((end_at - start) as u32).to_le_bytes());
    record[16..20].copy_from_slice(&(start as u32).to_le_bytes());
    Some(ListHead {
        end: end_at,
        record,
        read: left,
        skipped: files - left,
    })
}

/// A zip as its reader sees it: whole, or (`head`) cut after its member list's head and
/// ended by an end record listing that head alone.
struct Listed<R> {
    inner: R,
    head: Option<(u64, [u8; 22])>,
    at: u64,
}

impl<R: ReadSeek> Read for Listed<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let Some((end, record)) = &self.head else {
            return self.inner.read(buf);
        };
        let k = if self.at < *end {
            let room = (*end - self.at).min(buf.len() as u64) as usize;
            self.inner.read(&mut buf[..room])?
        } else {
            let from = ((self.at - end) as usize).min(record.len());
            let k = (record.len() - from).min(buf.len());
            buf[..k].copy_from_slice(&record[from..from + k]);
            k
        };
        self.at += k as u64;
        Ok(k)
    }
}

impl<R: ReadSeek> Seek for Listed<R> {
    fn seek(&mut self, to: io::SeekFrom) -> io::Result<u64> {
        let Some((end, _)) = self.head else {
            return self.inner.seek(to);
        };
        let size = end + 22;
        let at = match to {
            io::SeekFrom::Start(n) => Some(n),
            io::SeekFrom::End(d) => size.checked_add_signed(d),
            io::SeekFrom::Current(d) => self.at.checked_add_signed(d),
        }
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek before the start"))?;
        self.inner.seek(io::SeekFrom::Start(at.min(end)))?;
        self.at = at;
        Ok(at)
    }
}

impl<R: ReadSeek> ReadSeek for Listed<R> {
    fn held(&self) -> u64 {
        self.inner.held()
    }
}

/// Walk a zip from its local headers (no central directory).
fn zip_stream_members(
    r: &mut impl Read,
    held: u64,
    total: &Inflated,
    budget: &Budget,
    each: &mut dyn FnMut(Member<'_>),
    notes: &mut Vec<Note>,
) {
    let mut last: Option<String> = None;
    let mut read = 0;
    // Each member's compressed bytes as really read (its local header's sizes may lie): the
    // ratio cap is computed from them.
    let to = Rc::new(std::cell::RefCell::new(std::sync::Arc::default()));
    let mut r = ReadCount {
        inner: r,
        to: to.clone(),
    };
    loop {
        match zip::read::read_zipfile_from_stream(&mut r) {
            // Past the member cap: the rest are not walked (each would have to be inflated
            // to find the next header), so their count is not known.
            Ok(Some(_)) if !budget.take() => {
                let cap = crate::limits::ARCHIVE_MEMBERS;
                notes.push((
                    None,
                    text!(
                        "zip archive: the members after the {read} read here were not read, past the cap of {cap} members per input (limits::ARCHIVE_MEMBERS, nested archives included)",
                        "zip 归档：在这里读取的 {read} 个成员之后的成员未读取，超过了每个输入 {cap} 个成员的上限（limits::ARCHIVE_MEMBERS，含嵌套归档）"
                    ),
                ));
                break;
            }
            Ok(Some(file)) => {
                read += 1;
                last = file.name().ok().map(|n| clean(&n));
                let compressed = next_member(&to);
                if !zip_one(file, compressed, held, total, each, notes) {
                    break;
                }
            }
            Ok(None) => break,
            Err(e) => {
                notes.push((None, cut_short("zip", last.as_deref(), &e)));
                break;
            }
        }
    }
}

/// Hand out one zip member; false when the archive ended inside it.
fn zip_one<R: Read>(
    mut file: zip::read::ZipFile<'_, R>,
    compressed: std::sync::Arc<std::sync::atomic::AtomicU64>,
    held: u64,
    total: &Inflated,
    each: &mut dyn FnMut(Member<'_>),
    notes: &mut Vec<Note>,
) -> bool {
    let name = file
        .name()
        .map(|n| clean(&n))
        .unwrap_or_else(|_| "(unnamed)".into());
    if file.is_dir() {
        return true;
    }
    if file.is_symlink() {
        notes.push((
            Some(name),
            text!(
                "a link in the archive: not followed",
                "归档中的链接：不跟随"
            ),
        ));
        return true;
    }
    let size = file.size();
    // `compressed`: the bytes really read for it from the archive, never a size it claims.
    let got = Rc::new(Cell::new(0));
    let mut err = None;
    {
        let measured = Measured {
            inner: ErrKeep {
                inner: &mut file,
                err: &mut err,
            },
            got: got.clone(),
        };
        // A zip member inflates on its own: the total and ratio caps count it.
        let cap = GzipCap::new(measured, compressed, "member", total);
        each(Member::capped(&name, size, cap, held));
    }
    if let Some(e) = err {
        notes.push((
            Some(name),
            {
                let got = got.get();
                text!(
                    "member damaged or cut short after {got} of its {size} bytes ({e}); what was read is analysed",
                    "成员损坏或被截断，只读到它 {size} 字节中的 {got} 字节（{e}）；已读到的部分照常分析"
                )
            },
        ));
        return false;
    }
    true
}

/// Keeps the first read error's text for the walk's note (the reader of the member says it
/// too, as a read error of that member).
struct ErrKeep<'e, R> {
    inner: R,
    err: &'e mut Option<String>,
}

impl<R: Read> Read for ErrKeep<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf).inspect_err(|e| {
            if self.err.is_none() {
                *self.err = Some(e.to_string());
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tar_and_zip_are_known_by_magic() {
        let mut h = vec![0u8; 512];
        h[257..263].copy_from_slice(b"ustar\0");
        assert!(is_tar(&h));
        assert!(!is_tar(&h[..300]));
        assert!(!is_tar(&[b'x'; 512]));
        assert!(is_zip(b"PK\x03\x04rest"));
        let mut torch = b"PK\x03\x04".to_vec();
        torch.resize(26, 0);
        torch.extend_from_slice(&(16u16).to_le_bytes());
        torch.extend_from_slice(&[0, 0]);
        torch.extend_from_slice(b"archive/data.pkl");
        assert!(is_torch_save(&torch));
        torch[30] = b'x';
        assert!(is_torch_save(&torch));
        // A zip a person made, its first member a deflated `data.pkl`: an archive to read.
        let mut deflated = torch.clone();
        deflated[8] = 8;
        assert!(!is_torch_save(&deflated));
        let n = torch.len();
        torch[n - 1] = b'x';
        assert!(!is_torch_save(&torch));
        assert!(!is_zip(b"PKZIP is a program"));
    }
}
