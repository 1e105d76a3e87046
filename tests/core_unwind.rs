//! Stacks unwound like a debugger: helpers built at `-O2 -fomit-frame-pointer` (no frame
//! pointers to follow), C and C++, nested five calls deep through a shared library
//! (tests/core_helpers/nest/), crashed for real; the report must list every frame in order by
//! CFI, with names, and with DWARF (in the binaries or in separate build-id debug files) file,
//! line and the inlined frame. Expected lines are read from the helper sources.

mod core_helpers;

use core_helpers::{Debug, core_of, line_of, nest_helper};
use trainwreck::sources::elfcore::{CoreAnalysis, CoreOptions, StackFrame, analyze_core};

fn names(frames: &[StackFrame]) -> Vec<String> {
    frames
        .iter()
        .map(|f| {
            let s = f.symbol.clone().unwrap_or_default();
            // `name+0x1b` -> `name`; a C++ name keeps its parameter list.
            match s.rfind("+0x") {
                Some(i) => s[..i].to_string(),
                None => s,
            }
        })
        .collect()
}

fn crash(cpp: bool, debug: Debug, args: &[&str]) -> (CoreAnalysis, std::path::PathBuf) {
    let exe = nest_helper(cpp, debug);
    let core = core_of(if cpp { "nestpp" } else { "nest" }, &exe, args);
    let dir = exe.parent().expect("dir").to_path_buf();
    let opts = CoreOptions {
        search_paths: vec![dir.join("debug")],
        ..CoreOptions::default()
    };
    (analyze_core(&core, &opts), core)
}

fn file_name(f: &StackFrame) -> Option<&str> {
    f.file.as_deref().map(|p| p.rsplit('/').next().unwrap_or(p))
}

/// The C helper's frames, innermost first: level5 (poke inlined), 4, 3, 2 in libnest.so,
/// level1 in the executable (main calls it as a tail call, so main has no frame), then libc.
const C_FRAMES: [&str; 5] = [
    "nest_level5",
    "nest_level4",
    "nest_level3",
    "nest_level2",
    "level1",
];

fn assert_c_stack(a: &CoreAnalysis, with_lines: bool) {
    let f = &a.summary.frames;
    let got = names(f);
    assert!(got.len() >= 6, "too few frames: {got:?}\n{:#?}", a.warnings);
    assert_eq!(got[..5], C_FRAMES, "frames in order: {got:?}");
    assert_eq!(f[0].how, "pc");
    for fr in &f[1..5] {
        assert_eq!(fr.how, "cfi", "found by CFI: {fr:?}");
    }
    assert!(
        f[5..].iter().any(|x| x
            .symbol
            .as_deref()
            .is_some_and(|s| s.starts_with("__libc_start"))),
        "the walk reaches libc's start: {got:?}"
    );
    assert!(
        f[0].module
            .as_deref()
            .is_some_and(|m| m.ends_with("/libnest.so"))
    );
    if !with_lines {
        assert!(
            f[..5]
                .iter()
                .all(|x| x.line.is_none() && x.inlined.is_empty())
        );
        return;
    }
    let want = [
        (
            "libnest.c",
            line_of("nest/libnest.c", "int r = poke(x + 5);"),
        ),
        (
            "libnest.c",
            line_of("nest/libnest.c", "nest_level5(x + 1);"),
        ),
        (
            "libnest.c",
            line_of("nest/libnest.c", "nest_level4(x + 1);"),
        ),
        (
            "libnest.c",
            line_of("nest/libnest.c", "nest_level3(x + 1);"),
        ),
        ("nest.c", line_of("nest/nest.c", "nest_level2(x + 1);")),
    ];
    for (fr, (file, line)) in f.iter().zip(want) {
        assert_eq!(
            (file_name(fr), fr.line),
            (Some(file), Some(line)),
            "source line of {fr:?}"
        );
    }
    assert_eq!(
        f[0].inlined.len(),
        1,
        "poke is inlined into level 5: {:?}",
        f[0]
    );
    let inl = &f[0].inlined[0];
    assert_eq!(inl.function, "poke");
    assert_eq!(
        inl.line,
        Some(line_of(
            "nest/libnest.c",
            "*(volatile int *)nest_target = v;"
        ))
    );
}

#[test]
fn c_nested_crash_without_frame_pointers_unwinds_by_cfi_with_lines_and_the_inlined_frame() {
    let (a, _) = crash(false, Debug::Inline, &[]);
    assert_c_stack(&a, true);
    let m = a
        .summary
        .modules
        .iter()
        .find(|m| m.path.ends_with("/libnest.so"))
        .expect("libnest.so is a module");
    assert_eq!(m.symbols, "build-id-match");
    assert_eq!(m.debug_file.as_deref(), Some(m.path.as_str()));
}

#[test]
fn c_nested_crash_without_debug_info_still_unwinds_and_names_every_frame() {
    let (a, _) = crash(false, Debug::None, &[]);
    assert_c_stack(&a, false);
}

#[test]
fn split_debug_files_in_a_build_id_folder_give_the_lines_of_stripped_binaries() {
    let (a, _) = crash(false, Debug::Split, &[]);
    assert_c_stack(&a, true);
    let m = a
        .summary
        .modules
        .iter()
        .find(|m| m.path.ends_with("/libnest.so"))
        .expect("libnest.so is a module");
    let d = m.debug_file.as_deref().expect("a debug file was used");
    assert!(d.contains("/debug/.build-id/"), "{d}");
}

#[test]
fn cpp_nested_crash_names_demangled_methods_with_lines_and_the_inlined_method() {
    let (a, _) = crash(true, Debug::Inline, &[]);
    let f = &a.summary.frames;
    let got = names(f);
    assert_eq!(
        got[..5],
        [
            "loader::Batch::stage5(int)",
            "loader::Batch::stage4(int)",
            "loader::Batch::stage3(int)",
            "loader::Batch::stage2(int)",
            "(anonymous namespace)::collate(int)",
        ],
        "{got:?}"
    );
    assert!(f[1..5].iter().all(|x| x.how == "cfi"), "{f:#?}");
    assert_eq!(f[1].mangled.as_deref(), Some("_ZN6loader5Batch6stage4Ei"));
    let want = [
        (
            "libnest.cpp",
            line_of("nest/libnest.cpp", "Batch::stage5(int x)"),
        ),
        (
            "libnest.cpp",
            line_of("nest/libnest.cpp", "Batch::stage4(int x)"),
        ),
        (
            "libnest.cpp",
            line_of("nest/libnest.cpp", "Batch::stage3(int x)"),
        ),
        (
            "libnest.cpp",
            line_of("nest/libnest.cpp", "Batch::stage2(int x)"),
        ),
        ("nest.cpp", line_of("nest/nest.cpp", "b.stage2(x + 1)")),
    ];
    for (fr, (file, line)) in f.iter().zip(want) {
        assert_eq!((file_name(fr), fr.line), (Some(file), Some(line)), "{fr:?}");
    }
    assert_eq!(f[0].inlined.len(), 1, "{:?}", f[0]);
    assert_eq!(f[0].inlined[0].function, "loader::Batch::poke(int)");
}

#[test]
fn every_thread_is_unwound_and_the_crashing_one_comes_first() {
    let (a, _) = crash(false, Debug::Inline, &["threads"]);
    assert_eq!(a.summary.thread_count, 3);
    assert_eq!(names(&a.summary.frames)[..5], C_FRAMES);
    assert_eq!(a.summary.other_threads.len(), 2);
    for t in &a.summary.other_threads {
        let n = names(&t.frames);
        assert!(
            n.iter().any(|s| s == "idle_worker"),
            "a waiting thread's stack runs through its start routine: {n:?}"
        );
        let i = n
            .iter()
            .position(|s| s == "idle_worker")
            .expect("idle_worker");
        assert!(
            t.frames[1..=i].iter().all(|f| f.how == "cfi"),
            "{:#?}",
            t.frames
        );
        assert_eq!(
            t.frames[i].line,
            Some(line_of("nest/nest.c", "for (;;) pause();"))
        );
    }
}
