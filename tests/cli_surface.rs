//! The command-line surface a careful user expects: every subcommand and argument has help
//! text, each subcommand offers only the formats it renders, and the shell completions and the
//! manual page are generated from the same command tree.

use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_trainwreck"))
}

/// Every subcommand (at any depth) has an about line and every argument a help text; the
/// names of those without are collected so one failure lists them all.
#[test]
fn every_subcommand_and_argument_has_help_text() {
    fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
        for a in cmd.get_arguments() {
            if a.get_help().is_none() && a.get_long_help().is_none() {
                missing.push(format!("{path} {}", a.get_id()));
            }
        }
        for sub in cmd.get_subcommands() {
            let p = format!("{path} {}", sub.get_name());
            if sub.get_about().is_none() && sub.get_long_about().is_none() {
                missing.push(p.clone());
            }
            walk(sub, &p, missing);
        }
    }
    let mut cmd = trainwreck::cli::cli_command();
    cmd.build();
    let mut missing = Vec::new();
    walk(&cmd, "trainwreck", &mut missing);
    // The walk saw the real tree (not an empty one that would pass vacuously).
    assert!(cmd.get_subcommands().count() >= 8);
    assert!(missing.is_empty(), "without help text: {missing:#?}");
}

#[test]
fn facts_refuses_a_format_it_does_not_render_with_exit_2_listing_the_valid_ones() {
    let out = bin()
        .args(["facts", "--format", "github", "fixtures/seed-bus-error"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("invalid value 'github'"), "{err}");
    assert!(err.contains("[possible values: table, json]"), "{err}");
    // The formats it does render still work.
    let ok = bin()
        .args(["facts", "--format", "json", "fixtures/seed-bus-error"])
        .output()
        .unwrap();
    assert_eq!(ok.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&ok.stdout).unwrap();
    assert!(v["facts"].as_array().is_some_and(|f| !f.is_empty()), "{v}");
}

/// Each subcommand's `--format` lists exactly what its renderer has.
#[test]
fn each_format_option_offers_only_what_its_subcommand_renders() {
    let cmd = trainwreck::cli::cli_command();
    let formats = |path: &[&str]| -> Vec<String> {
        let mut c = &cmd;
        for p in path {
            c = c.find_subcommand(p).unwrap();
        }
        let a = c.get_arguments().find(|a| a.get_id() == "format").unwrap();
        a.get_possible_values()
            .iter()
            .map(|v| v.get_name().to_string())
            .collect()
    };
    assert_eq!(
        formats(&["analyze"]),
        ["table", "json", "markdown", "github", "junit", "html"]
    );
    assert_eq!(formats(&["facts"]), ["table", "json"]);
    assert_eq!(
        formats(&["triage"]),
        ["table", "json", "markdown", "github", "junit", "html"]
    );
}

#[test]
fn bash_completion_names_every_subcommand() {
    let out = bin().args(["completions", "bash"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let script = String::from_utf8(out.stdout).unwrap();
    assert!(script.contains("complete -F _trainwreck"), "{script}");
    for sub in trainwreck::cli::cli_command().get_subcommands() {
        let name = sub.get_name();
        assert!(
            script.contains(&format!("trainwreck__{name}")) || script.contains(name),
            "completion lacks {name}"
        );
    }
    assert!(script.contains("--format"));
    for shell in ["zsh", "fish"] {
        let out = bin().args(["completions", shell]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{shell}");
        let s = String::from_utf8(out.stdout).unwrap();
        assert!(
            s.contains("analyze") && s.contains("triage"),
            "{shell}: {s}"
        );
    }
    let bad = bin().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn bash_completion_script_is_valid_bash() {
    // CI's Debian has bash: a machine without it fails here, naming what it lacks.
    assert!(
        Command::new("bash").args(["-c", "true"]).output().is_ok(),
        "needs bash on PATH"
    );
    let out = bin().args(["completions", "bash"]).output().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("tw.bash");
    std::fs::write(&f, &out.stdout).unwrap();
    let check = Command::new("bash").arg("-n").arg(&f).output().unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
}

#[test]
fn man_page_is_roff_naming_the_subcommands() {
    let out = bin().arg("man").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let page = String::from_utf8(out.stdout).unwrap();
    // roff: clap_mangen's two-line quote-string prelude, then the title line.
    let title = page
        .lines()
        .find(|l| l.starts_with('.') && !l.starts_with(".ie") && !l.starts_with(".el"));
    assert!(
        title.is_some_and(|t| t.starts_with(".TH trainwreck 1")),
        "{page}"
    );
    assert!(page.contains(".SH SUBCOMMANDS"), "{page}");
    for sub in [
        "analyze", "facts", "triage", "capture", "run", "history", "rules",
    ] {
        assert!(
            page.contains(&format!("trainwreck\\-{sub}")),
            "man page lacks {sub}"
        );
    }
}

#[test]
fn each_subcommand_has_its_own_man_page_with_its_options() {
    let out = bin().args(["man", "analyze"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let page = String::from_utf8(out.stdout).unwrap();
    assert!(page.contains(".TH trainwreck-analyze 1"), "{page}");
    assert!(page.contains("\\-\\-format"), "{page}");
    assert!(page.contains("\\-\\-exit\\-code"), "{page}");
    let bad = bin().args(["man", "nosuch"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
}
