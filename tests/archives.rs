//! Archives as inputs, built at test time from the repository's own run directory
//! (fixtures/seed-bus-error) with the same crates the reader uses: a CI artifact's .zip, a
//! Slurm job's .tar.zst and the other tar flavours are diagnosed like the directory they came
//! from (same findings, fingerprint, evidence, facts and inputs, paths prefixed `x.zip!/`);
//! nesting, truncation and bombs say what they could not read; `<(cat log)` reads like the file.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

const RUN: &str = "fixtures/seed-bus-error";

fn trainwreck(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_trainwreck"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json(path: &str) -> serde_json::Value {
    let (code, out, err) = trainwreck(&["analyze", path, "--format", "json"]);
    assert_eq!(code, 0, "{path}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// The files of the run directory, relative to it, in a stable order.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let e = e.unwrap();
        if e.file_type().is_file() {
            let rel = e
                .path()
                .strip_prefix(dir)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            out.push((rel, std::fs::read(e.path()).unwrap()));
        }
    }
    assert!(out.len() >= 3, "the fixture run is there");
    out
}

/// A report with every cited path stripped of `prefix` (and only of it): what must be equal
/// between an archive and its directory. Paths without the prefix are kept as they are, so
/// a path that should carry it and does not makes the comparison fail.
fn comparable(v: &serde_json::Value, prefix: &str) -> serde_json::Value {
    fn strip(v: &mut serde_json::Value, prefix: &str) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m.iter_mut() {
                    if k == "path"
                        && let Some(s) = x.as_str()
                        && let Some(rest) = s.strip_prefix(prefix)
                    {
                        *x = serde_json::Value::String(rest.to_string());
                    } else {
                        strip(x, prefix);
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(|x| strip(x, prefix)),
            _ => {}
        }
    }
    let mut v = v.clone();
    strip(&mut v, prefix);
    v
}

fn assert_same_report(archive: &serde_json::Value, dir: &serde_json::Value, prefix: &str) {
    let a = comparable(archive, prefix);
    for key in [
        "verdict",
        "findings",
        "fingerprint",
        "facts",
        "inputs",
        "warnings",
    ] {
        assert_eq!(a[key], dir[key], "{key} differs (prefix {prefix})");
    }
    // The comparison was not vacuous: the seed story's cause, cited with the prefix.
    assert_eq!(dir["findings"][0]["category"], "shm_exhausted");
    let ev = archive["findings"][0]["evidence"][0]["path"]
        .as_str()
        .unwrap();
    assert!(ev.starts_with(prefix), "{ev}");
}

fn write_zip(path: &Path, members: &[(String, Vec<u8>)], dirs: bool) {
    let mut z = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    let mut made = std::collections::BTreeSet::new();
    for (name, data) in members {
        if dirs
            && let Some((d, _)) = name.rsplit_once('/')
            && made.insert(d.to_string())
        {
            z.add_directory(format!("{d}/"), opts).unwrap();
        }
        z.start_file(name, opts).unwrap();
        z.write_all(data).unwrap();
    }
    z.finish().unwrap();
}

fn tar_bytes(members: &[(String, Vec<u8>)], top: &str) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    if !top.is_empty() {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Directory);
        h.set_size(0);
        h.set_mode(0o755);
        b.append_data(&mut h, format!("{top}/"), std::io::empty())
            .unwrap();
    }
    for (name, data) in members {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(1_715_677_000);
        let p = if top.is_empty() {
            name.clone()
        } else {
            format!("{top}/{name}")
        };
        b.append_data(&mut h, p, &data[..]).unwrap();
    }
    b.into_inner().unwrap()
}

fn gz(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// The messages of the report's warnings about `path`.
fn warnings_on<'a>(v: &'a serde_json::Value, path: &str) -> Vec<&'a str> {
    v["warnings"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|w| w["path"] == path)
                .filter_map(|w| w["message"].as_str())
                .collect()
        })
        .unwrap_or_default()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_ci_artifact_zip_is_diagnosed_like_its_directory() {
    let d = tempfile::tempdir().unwrap();
    let zip = d.path().join("artifact.zip");
    write_zip(&zip, &files(Path::new(RUN)), true);
    let dir = json(RUN);
    let a = json(s(&zip));
    assert_same_report(&a, &dir, &format!("{}!/", s(&zip)));
    // Cited as `artifact.zip!/train.log:LINE` in the terminal report too.
    let (_, table, _) = trainwreck(&["analyze", s(&zip), "--no-color"]);
    assert!(
        table.contains(&format!("{}!/train.log:", s(&zip))),
        "{table}"
    );
}

#[test]
fn a_slurm_job_tar_zst_is_diagnosed_like_its_directory() {
    let d = tempfile::tempdir().unwrap();
    // The directory it came from: the job's folder inside a parent.
    let parent = d.path().join("dir");
    let job = parent.join("job-4242");
    for (name, data) in files(Path::new(RUN)) {
        let p = job.join(&name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, data).unwrap();
    }
    let tar = tar_bytes(&files(Path::new(RUN)), "job-4242");
    let zst = d.path().join("slurm-4242.tar.zst");
    std::fs::write(&zst, zstd::encode_all(&tar[..], 3).unwrap()).unwrap();
    let dir = json(s(&parent));
    let a = json(s(&zst));
    assert_same_report(&a, &dir, &format!("{}!/", s(&zst)));
    assert!(
        a["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["path"] == format!("{}!/job-4242/train.log", s(&zst))),
        "{}",
        a["inputs"]
    );
}

/// Every tar flavour, recognised by its bytes whatever its name, and a zip named `.bin`.
#[test]
fn every_tar_flavour_and_a_misnamed_zip_read_like_the_directory() {
    let d = tempfile::tempdir().unwrap();
    let members = files(Path::new(RUN));
    let tar = tar_bytes(&members, "");
    let xz = {
        let mut e = liblzma::write::XzEncoder::new(Vec::new(), 6);
        e.write_all(&tar).unwrap();
        e.finish().unwrap()
    };
    let bz = {
        let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::default());
        e.write_all(&tar).unwrap();
        e.finish().unwrap()
    };
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("run.tar", tar.clone()),
        ("run.tar.gz", gz(&tar)),
        ("run.tgz", gz(&tar)),
        ("run.tar.xz", xz),
        ("run.tar.bz2", bz),
        // By magic, not by name.
        ("run-logs", gz(&tar)),
    ];
    let dir = json(RUN);
    for (name, bytes) in cases {
        let p = d.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        assert_same_report(&json(s(&p)), &dir, &format!("{}!/", s(&p)));
    }
    let z = d.path().join("artifact.bin");
    write_zip(&z, &members, false);
    assert_same_report(&json(s(&z)), &dir, &format!("{}!/", s(&z)));
}

/// A single compressed log (bzip2 here, besides gzip/zstd/xz/lz4) reads like the log.
#[test]
fn a_single_bz2_log_reads_like_the_log() {
    let d = tempfile::tempdir().unwrap();
    let log = std::fs::read(Path::new(RUN).join("train.log")).unwrap();
    let p = d.path().join("train.log.bz2");
    let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::best());
    e.write_all(&log).unwrap();
    std::fs::write(&p, e.finish().unwrap()).unwrap();
    let plain = d.path().join("train.log");
    std::fs::write(&plain, &log).unwrap();
    let a = json(s(&p));
    let b = json(s(&plain));
    // The whole diagnosis, origin and last lines included, is the plain log's.
    assert_eq!(
        comparable(&a, s(&p))["findings"],
        comparable(&b, s(&plain))["findings"]
    );
    assert_eq!(a["fingerprint"], b["fingerprint"]);
    assert_eq!(a["inputs"][0]["kind"], b["inputs"][0]["kind"]);
    let ev = |v: &serde_json::Value| -> Vec<(u64, String)> {
        v["findings"][0]["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["line"].as_u64().unwrap(), e["text"].to_string()))
            .collect()
    };
    assert_eq!(ev(&a), ev(&b));
    assert!(!ev(&a).is_empty());
}

/// A `.tar.gz` inside a `.zip` is read (one level deep); an archive inside that one is named
/// in a warning, not silently skipped.
#[test]
fn a_tar_gz_inside_a_zip_is_read_and_a_third_level_is_named() {
    let d = tempfile::tempdir().unwrap();
    let members = files(Path::new(RUN));
    let inner = gz(&tar_bytes(&members, ""));
    // Deeper: a zip inside the tar inside the zip.
    let deepest = d.path().join("deep.zip");
    write_zip(&deepest, &[("x.log".into(), b"hello\n".to_vec())], false);
    let mut with_deep = members.clone();
    with_deep.push(("more/deep.zip".into(), std::fs::read(&deepest).unwrap()));
    let inner_deep = gz(&tar_bytes(&with_deep, ""));
    let outer = d.path().join("artifact.zip");
    write_zip(
        &outer,
        &[
            ("logs/run.tar.gz".into(), inner),
            ("deep/run.tar.gz".into(), inner_deep),
        ],
        false,
    );
    let v = json(s(&outer));
    let p = |x: &str| format!("{}!/{x}", s(&outer));
    let inputs: Vec<&str> = v["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"].as_str().unwrap())
        .collect();
    assert!(
        inputs.contains(&p("logs/run.tar.gz!/train.log").as_str()),
        "{inputs:?}"
    );
    assert!(
        inputs.contains(&p("deep/run.tar.gz!/snapshots/df-h_dev_shm.txt").as_str()),
        "{inputs:?}"
    );
    assert_eq!(v["findings"][0]["category"], "shm_exhausted");
    let deep = p("deep/run.tar.gz!/more/deep.zip");
    let w = warnings_on(&v, &deep);
    assert_eq!(w.len(), 1, "{}", v["warnings"]);
    assert!(w[0].contains("not read"), "{}", w[0]);
    // Its member was not read as an input.
    assert!(!inputs.iter().any(|i| i.contains("x.log")), "{inputs:?}");
}

/// A tar cut inside its last member: what was read is analysed (the /dev/shm snapshot's facts,
/// the log up to the cut), and a warning on that member says where it stopped.
#[test]
fn a_truncated_tar_is_analysed_up_to_where_it_stops() {
    let d = tempfile::tempdir().unwrap();
    let members = files(Path::new(RUN));
    let tar = tar_bytes(&members, "");
    // Cut in the middle of train.log, the last member.
    let log_len = members
        .iter()
        .find(|(n, _)| n == "train.log")
        .unwrap()
        .1
        .len();
    let cut = tar.len() - 1024 - (log_len.next_multiple_of(512) - log_len) - log_len / 3;
    for (name, bytes) in [
        ("cut.tar", tar[..cut].to_vec()),
        ("cut.tar.gz", gz(&tar)[..gz(&tar).len() * 9 / 10].to_vec()),
    ] {
        let p = d.path().join(name);
        std::fs::write(&p, &bytes).unwrap();
        let v = json(s(&p));
        let facts = v["facts"].to_string();
        assert!(facts.contains("shm.size_bytes"), "{name}: {facts}");
        let w = v["warnings"].to_string();
        let member = format!("{}!/train.log", s(&p));
        assert!(
            v["warnings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|x| x["path"] == member.as_str()),
            "{name}: {w}"
        );
        assert!(
            v["inputs"]
                .as_array()
                .unwrap()
                .iter()
                .any(|i| i["path"] == member.as_str()),
            "{name}: {}",
            v["inputs"]
        );
        eprintln!("{name}: {w}");
    }
    let p = d.path().join("cut.tar");
    let v = json(s(&p));
    let msg = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["path"] == format!("{}!/train.log", s(&p)).as_str())
        .unwrap()["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        msg.contains("truncated") && msg.contains(&format!("of its {log_len} bytes")),
        "{msg}"
    );
}

/// A zip whose end (the central directory) is missing is read from its local headers.
#[test]
fn a_zip_cut_before_its_member_list_is_read_from_its_local_headers() {
    let d = tempfile::tempdir().unwrap();
    let full = d.path().join("full.zip");
    write_zip(&full, &files(Path::new(RUN)), false);
    let bytes = std::fs::read(&full).unwrap();
    // The central directory starts at the first `PK\1\2`.
    let cd = bytes.windows(4).position(|w| w == b"PK\x01\x02").unwrap();
    let p = d.path().join("cut.zip");
    std::fs::write(&p, &bytes[..cd + 10]).unwrap();
    let v = json(s(&p));
    assert_eq!(v["findings"][0]["category"], "shm_exhausted", "{v}");
    let w = v["warnings"].as_array().unwrap();
    assert!(
        w.iter()
            .any(|x| x["path"] == s(&p)
                && x["message"].as_str().unwrap().contains("central directory")),
        "{w:?}"
    );
    assert_eq!(v["inputs"].as_array().unwrap().len(), 4, "{}", v["inputs"]);
}

/// A decompression bomb inside a tar.gz stops at the ratio cap, with the cap's warning and
/// its numbers, and the archive's other members are still read.
#[test]
fn a_bomb_member_stops_at_the_decompression_cap() {
    let d = tempfile::tempdir().unwrap();
    let mut members = files(Path::new(RUN));
    // 1 MiB of blank lines, compressed once and repeated as gzip members: 256 MiB of member.
    let mut block = vec![b' '; 1 << 20];
    for i in (4095..block.len()).step_by(4096) {
        block[i] = b'\n';
    }
    let piece = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(&block).unwrap();
        e.finish().unwrap()
    };
    // The tar: the fixture's members, then the bomb's header, whose data are the pieces.
    members.sort_by(|a, b| a.0.cmp(&b.0));
    let head = tar_bytes(&members, "");
    let head = &head[..head.len() - 1024]; // without the end-of-archive blocks
    let mut h = tar::Header::new_gnu();
    h.set_path("zz-bomb.log").unwrap();
    h.set_size(256 << 20);
    h.set_mode(0o644);
    h.set_cksum();
    let mut f = std::fs::File::create(d.path().join("job.tar.gz")).unwrap();
    let mut first = head.to_vec();
    first.extend_from_slice(h.as_bytes());
    f.write_all(&gz(&first)).unwrap();
    for _ in 0..256 {
        f.write_all(&piece).unwrap();
    }
    drop(f);
    let p = d.path().join("job.tar.gz");
    let t = std::time::Instant::now();
    let v = json(s(&p));
    let w: Vec<String> = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["path"].as_str().unwrap().starts_with(s(&p)))
        .map(|w| w["message"].as_str().unwrap().to_string())
        .collect();
    assert!(
        w.iter()
            .any(|m| m.contains("decompression stopped after") && m.contains("decompression bomb")),
        "{w:?}"
    );
    // The members before it were read: the seed story is still diagnosed.
    assert_eq!(v["findings"][0]["category"], "shm_exhausted");
    eprintln!("bomb stopped in {:?}: {w:?}", t.elapsed());
}

/// A zip member that inflates past the ratio cap is stopped by the per-member caps.
#[test]
fn a_zip_bomb_member_stops_at_the_ratio_cap() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("bomb.zip");
    let mut z = zip::ZipWriter::new(std::fs::File::create(&p).unwrap());
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .compression_level(Some(1))
        .large_file(false);
    z.start_file("train.log", opts).unwrap();
    z.write_all(&std::fs::read(Path::new(RUN).join("train.log")).unwrap())
        .unwrap();
    z.start_file("blank.log", opts).unwrap();
    // Blank lines (text, so the member is read, not skipped as binary).
    let mut block = vec![b' '; 1 << 20];
    for i in (4095..block.len()).step_by(4096) {
        block[i] = b'\n';
    }
    for _ in 0..80 {
        z.write_all(&block).unwrap();
    }
    z.finish().unwrap();
    let v = json(s(&p));
    let member = format!("{}!/blank.log", s(&p));
    let w = warnings_on(&v, &member);
    assert!(
        w.iter()
            .any(|m| m.contains("decompression stopped after") && m.contains("decompression bomb")),
        "{}",
        v["warnings"]
    );
    assert!(
        v["inputs"].to_string().contains("train.log"),
        "{}",
        v["inputs"]
    );
}

/// A zip on stdin (no random access) is held in memory and read like the file.
#[test]
fn a_zip_on_stdin_reads_like_the_zip_file() {
    let d = tempfile::tempdir().unwrap();
    let zip = d.path().join("artifact.zip");
    write_zip(&zip, &files(Path::new(RUN)), true);
    let out = Command::new(env!("CARGO_BIN_EXE_trainwreck"))
        .args(["analyze", "-", "--format", "json"])
        .stdin(std::fs::File::open(&zip).unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_same_report(&v, &json(RUN), "<stdin>!/");
}

fn bash() -> Option<PathBuf> {
    let ok = Command::new("bash").args(["-c", "true"]).output().ok()?;
    ok.status.success().then(|| PathBuf::from("bash"))
}

/// `analyze <(cat log)` (a FIFO named on the command line) gives the log's diagnosis; so does
/// an archive through process substitution.
#[test]
fn process_substitution_reads_like_the_file() {
    // CI's Debian has bash: a machine without it fails here, naming what it lacks.
    let bash = bash().expect("bash is on PATH (process substitution needs it)");
    let bin = env!("CARGO_BIN_EXE_trainwreck");
    let log = Path::new(RUN).join("train.log");
    let run = |script: String| -> serde_json::Value {
        let out = Command::new(&bash).args(["-c", &script]).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let piped = run(format!(
        "'{bin}' analyze <(cat '{}') --format json",
        log.display()
    ));
    let file = json(log.to_str().unwrap());
    let path_of = piped["inputs"][0]["path"].as_str().unwrap().to_string();
    assert!(
        path_of.starts_with("/dev/fd/") || path_of.starts_with("/proc/"),
        "{path_of}"
    );
    let a = comparable(&piped, &path_of);
    let b = comparable(&file, log.to_str().unwrap());
    for key in ["verdict", "findings", "fingerprint", "facts"] {
        assert_eq!(a[key], b[key], "{key}");
    }
    assert_eq!(b["findings"][0]["category"], "shm_exhausted");
    // A zip through a pipe: held in memory, same report as the directory.
    let d = tempfile::tempdir().unwrap();
    let zip = d.path().join("a.zip");
    write_zip(&zip, &files(Path::new(RUN)), false);
    let v = run(format!(
        "'{bin}' analyze <(cat '{}') --format json",
        zip.display()
    ));
    let first = v["inputs"][0]["path"].as_str().unwrap();
    let prefix = format!("{}!/", first.split_once("!/").unwrap().0);
    assert_same_report(&v, &json(RUN), &prefix);
}

/// Progress counts a compressed input in the unit of its size: the compressed bytes read, so
/// "done" never runs past "total" (it used to count the decompressed bytes against the
/// compressed size: `10.56/0.07 GB`).
#[test]
fn progress_counts_compressed_inputs_in_their_stored_bytes() {
    use std::sync::atomic::Ordering;
    let d = tempfile::tempdir().unwrap();
    let log = std::fs::read(Path::new(RUN).join("train.log")).unwrap();
    // A log that compresses well: 200 copies (about 1 MB) into a few kilobytes.
    let big: Vec<u8> = log.iter().copied().cycle().take(log.len() * 200).collect();
    std::fs::write(d.path().join("train.log.gz"), gz(&big)).unwrap();
    let tar = tar_bytes(&files(Path::new(RUN)), "job");
    std::fs::write(
        d.path().join("job.tar.zst"),
        zstd::encode_all(&tar[..], 3).unwrap(),
    )
    .unwrap();
    let kb = trainwreck::rules::KnowledgeBase::load(&[]).unwrap();
    let engine = trainwreck::analyze::Engine::new(&kb);
    for name in ["train.log.gz", "job.tar.zst"] {
        let path = d.path().join(name).display().to_string();
        let (inputs, _) = trainwreck::inputs::collect(std::slice::from_ref(&path));
        let progress = trainwreck::analyze::Progress::default();
        let a = engine.run_with_progress(&inputs, 1, &progress);
        let total = progress.bytes_total.load(Ordering::Relaxed);
        let done = progress.bytes_done.load(Ordering::Relaxed);
        let on_disk = std::fs::metadata(&path).unwrap().len();
        let decompressed: u64 = a.inputs.iter().map(|i| i.bytes).sum();
        assert_eq!(total, on_disk, "{name}");
        assert!(decompressed > on_disk, "{name}: the test compresses");
        assert!(
            done <= total && done * 10 >= total * 8,
            "{name}: done {done} of total {total} (decompressed {decompressed})"
        );
    }
}

/// A core dump inside an archive is named as not read (the core reader needs the file
/// itself), never silently dropped; the same core as a file is read.
#[test]
fn a_core_inside_an_archive_is_said_not_read() {
    let d = tempfile::tempdir().unwrap();
    let gz_core = std::fs::read("fixtures/cores/bus-static.core.gz").unwrap();
    let mut core = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz_core[..]), &mut core).unwrap();
    let p = d.path().join("crash.tar");
    std::fs::write(
        &p,
        tar_bytes(&[("cores/core.1234".into(), core.clone())], ""),
    )
    .unwrap();
    let v = json(s(&p));
    let member = format!("{}!/cores/core.1234", s(&p));
    let w = warnings_on(&v, &member);
    assert!(
        w.iter()
            .any(|m| m.contains("core") && m.contains("not read")),
        "{}",
        v["warnings"]
    );
    assert!(
        v["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["path"] == member.as_str() && i["kind"] == "elf-core"),
        "{}",
        v["inputs"]
    );
    // The same core as a file is read (so the warning is about the archive, not the core).
    let f = d.path().join("core.1234");
    std::fs::write(&f, &core).unwrap();
    let v = json(s(&f));
    assert!(v["cores"].as_array().is_some_and(|c| !c.is_empty()), "{v}");
    // And compressed with bzip2 (besides gzip, zstd, xz, lz4), the same core.
    let b = d.path().join("core.1234.bz2");
    let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
    e.write_all(&core).unwrap();
    std::fs::write(&b, e.finish().unwrap()).unwrap();
    let vb = json(s(&b));
    assert_eq!(vb["cores"][0]["signal"], v["cores"][0]["signal"], "{vb}");
    assert_eq!(
        vb["cores"][0]["fault_addr"], v["cores"][0]["fault_addr"],
        "{vb}"
    );
    assert_eq!(v["cores"][0]["signal"], "SIGBUS");
}

#[test]
fn an_empty_archive_is_said_to_be_empty() {
    let d = tempfile::tempdir().unwrap();
    let z = d.path().join("empty.zip");
    write_zip(&z, &[], false);
    let v = json(s(&z));
    assert_eq!(v["inputs"].as_array().unwrap().len(), 0, "{v}");
    assert_eq!(v["warnings"][0]["path"], s(&z), "{v}");
    assert_eq!(v["warnings"][0]["message"], "archive holds no files", "{v}");
    // An empty tar is all zeros (no header to know it by): it is said to be unread binary.
    let t = d.path().join("empty.tar.gz");
    std::fs::write(&t, gz(&tar_bytes(&[], ""))).unwrap();
    let v = json(s(&t));
    assert_eq!(v["warnings"][0]["path"], s(&t), "{v}");
}

/// A PyTorch checkpoint is a zip (`torch.save`: `training_args.bin`, `optimizer.pt` sit in
/// every output directory): it stays one binary input with one warning, not a walk over its
/// tensors, and the run's diagnosis is unchanged by it.
#[test]
fn a_torch_save_zip_in_a_run_directory_is_one_binary_input() {
    let d = tempfile::tempdir().unwrap();
    let run = d.path().join("run");
    for (name, data) in files(Path::new(RUN)) {
        let p = run.join(&name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, data).unwrap();
    }
    let plain = json(s(&run));
    // The layout torch.save writes: `<name>/data.pkl` first (a pickle), then the tensors.
    let mut pickle = vec![0x80, 0x02];
    pickle.extend_from_slice(b"}q\x00.");
    let ckpt = run.join("checkpoint-500/training_args.bin");
    std::fs::create_dir_all(ckpt.parent().unwrap()).unwrap();
    let mut z = zip::ZipWriter::new(std::fs::File::create(&ckpt).unwrap());
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (name, data) in [
        ("training_args/data.pkl", pickle),
        ("training_args/byteorder", b"little".to_vec()),
        ("training_args/data/0", vec![0u8; 4096]),
        ("training_args/version", b"3\n".to_vec()),
    ] {
        z.start_file(name, stored).unwrap();
        z.write_all(&data).unwrap();
    }
    z.finish().unwrap();
    let v = json(s(&run));
    let inputs = v["inputs"].as_array().unwrap();
    let ck: Vec<&serde_json::Value> = inputs
        .iter()
        .filter(|i| i["path"].as_str().unwrap().contains("training_args"))
        .collect();
    assert_eq!(ck.len(), 1, "{inputs:?}");
    assert_eq!(ck[0]["path"], "checkpoint-500/training_args.bin");
    assert_eq!(ck[0]["kind"], "binary");
    let w = v["warnings"].as_array().unwrap();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0]["message"]
            .as_str()
            .unwrap()
            .contains("PyTorch checkpoint"),
        "{w:?}"
    );
    assert_eq!(v["findings"], plain["findings"]);
    assert_eq!(v["fingerprint"], plain["fingerprint"]);
}

/// A zip that must be held in memory (read from a pipe) and is bigger than
/// `limits::ZIP_SPOOL_BYTES` is refused with the reason, and the analysis goes on with the
/// other inputs: the seed run beside it is still diagnosed.
#[test]
fn a_zip_on_stdin_over_the_spool_cap_is_refused_and_the_rest_is_read() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("huge.zip");
    let mut z = zip::ZipWriter::new(std::fs::File::create(&p).unwrap());
    let stored = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .large_file(true);
    z.start_file("train.log", stored).unwrap();
    z.write_all(b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
        .unwrap();
    z.start_file("shard-0000.bin", stored).unwrap();
    let block = vec![0u8; 1 << 20];
    let over = trainwreck::limits::ZIP_SPOOL_BYTES / (1 << 20) + 1;
    for _ in 0..over {
        z.write_all(&block).unwrap();
    }
    z.finish().unwrap();
    assert!(std::fs::metadata(&p).unwrap().len() > trainwreck::limits::ZIP_SPOOL_BYTES);
    let out = Command::new(env!("CARGO_BIN_EXE_trainwreck"))
        .args(["analyze", "-", RUN, "--format", "json"])
        .stdin(std::fs::File::open(&p).unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let w = warnings_on(&v, "<stdin>");
    assert!(
        w.iter()
            .any(|m| m.contains("limits::ZIP_SPOOL_BYTES") && m.contains("save it to a file")),
        "{}",
        v["warnings"]
    );
    // Nothing of the refused zip was read (its OOM line would be a finding) …
    assert!(!v.to_string().contains("<stdin>!/"), "{}", v["inputs"]);
    assert!(!v.to_string().contains("Tried to allocate 2.00 GiB"));
    // … and the directory beside it was.
    assert_eq!(v["findings"][0]["category"], "shm_exhausted");
}

/// The cap on all decompressed bytes together (`limits::GZIP_BYTES_TOTAL`, 32 GiB) belongs to
/// one analysis: an analysis whose total is near the cap stops reading a `.gz` with the cap's
/// warning, and the next analysis with the same compiled engine (as the fuzzers and `triage`
/// reuse it) starts from zero and reads the file whole. Decompressing 32 GiB in a test is not
/// affordable, so the first analysis starts 4 KiB under the cap.
#[test]
fn the_total_decompression_cap_counts_one_analysis_not_the_process() {
    use std::sync::atomic::Ordering;
    use trainwreck::limits::GZIP_BYTES_TOTAL;
    let d = tempfile::tempdir().unwrap();
    for (name, data) in files(Path::new(RUN)) {
        let (name, data) = if name == "train.log" {
            ("train.log.gz".to_string(), gz(&data))
        } else {
            (name, data)
        };
        std::fs::create_dir_all(d.path().join(&name).parent().unwrap()).unwrap();
        std::fs::write(d.path().join(name), data).unwrap();
    }
    let kb = trainwreck::rules::KnowledgeBase::load(&[]).unwrap();
    let engine = trainwreck::analyze::Engine::new(&kb);
    let paths = [s(d.path()).to_string()];
    // Paths inside the directory given are reported relative to it.
    let gz_path = "train.log.gz";

    let near = trainwreck::analyze::Progress::default();
    near.decompressed
        .store(GZIP_BYTES_TOTAL - 4096, Ordering::Relaxed);
    let r = trainwreck::diagnose_with_progress(&engine, &paths, 1, &near);
    let v = serde_json::to_value(&r).unwrap();
    let w = warnings_on(&v, gz_path);
    assert!(
        w.iter().any(|m| m.contains("limits::GZIP_BYTES_TOTAL")
            && m.contains("the rest of the file is not analysed")),
        "{}",
        v["warnings"]
    );
    let read = near.decompressed.load(Ordering::Relaxed) - (GZIP_BYTES_TOTAL - 4096);
    assert!(read > 0, "it read up to the cap");

    let fresh = trainwreck::analyze::Progress::default();
    let r = trainwreck::diagnose_with_progress(&engine, &paths, 1, &fresh);
    let v = serde_json::to_value(&r).unwrap();
    assert!(warnings_on(&v, gz_path).is_empty(), "{}", v["warnings"]);
    let whole = std::fs::metadata(Path::new(RUN).join("train.log"))
        .unwrap()
        .len();
    assert_eq!(fresh.decompressed.load(Ordering::Relaxed), whole);
    assert_eq!(v["findings"][0]["category"], "shm_exhausted");
}

/// Audit round 3, F-15: a zip of more members than `limits::ARCHIVE_MEMBERS` (50,000 per
/// input, an archive inside it included) reads that many and says how many it did not read;
/// the members of a tar inside it count against the same cap. The failure in the first
/// member is still diagnosed.
#[test]
fn members_past_the_member_cap_are_counted_and_said_not_read() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("many.zip");
    let mut z = zip::ZipWriter::new(std::fs::File::create(&p).unwrap());
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    z.start_file("logs/a-train.log", stored).unwrap();
    z.write_all(b"[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered\n")
        .unwrap();
    let inner: Vec<(String, Vec<u8>)> = (0..10)
        .map(|i| (format!("r{i}.log"), b"step 1\n".to_vec()))
        .collect();
    z.start_file("logs/b-inner.tar", stored).unwrap();
    z.write_all(&tar_bytes(&inner, "")).unwrap();
    // 1 + 1 + 10 read so far; 49,988 more reach the cap; 6 are past it.
    for i in 0..49_994 {
        z.start_file(format!("logs/m{i:05}.log"), stored).unwrap();
        z.write_all(b"ok\n").unwrap();
    }
    z.finish().unwrap();
    let t = std::time::Instant::now();
    let v = json(p.to_str().unwrap());
    let took = t.elapsed();
    assert_eq!(
        v["findings"][0]["category"], "cuda_illegal_access",
        "{}",
        v["findings"]
    );
    let warnings = v["warnings"].to_string();
    assert!(
        warnings.contains("zip archive: 6 members were not read, past the cap of 50000 members per input (limits::ARCHIVE_MEMBERS")
            && warnings.contains("49990 of this archive's members were read"),
        "{warnings}"
    );
    // The tar's members were all read: no cap warning of its own.
    assert!(!warnings.contains("tar archive:"), "{warnings}");
    let inputs = v["inputs"].as_array().unwrap();
    assert!(
        inputs.iter().any(|i| i["path"]
            .as_str()
            .is_some_and(|p| p.ends_with("b-inner.tar!/r9.log"))),
        "the nested tar's last member is not read"
    );
    assert!(
        !inputs.iter().any(|i| i["path"]
            .as_str()
            .is_some_and(|p| p.ends_with("m49993.log"))),
        "a member past the cap was read"
    );
    assert!(took.as_secs() < 20, "took {took:?}");
}
