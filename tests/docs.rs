//! The documentation that lives in this repository agrees with the code: the category
//! vocabulary of docs/categories.md is the one the rules are checked against (with the same
//! action classes), and every pointer a clone must be able to follow stays inside the
//! repository and names something that exists: links in any `*.md`, the `docs/…` files and
//! README sections the code cites, and no absolute path of the machine it was written on.
//! A module head's "never import the rule engine" is checked here too.

use trainwreck::model::Category;

fn read(p: &str) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

#[test]
fn the_category_table_in_docs_is_the_vocabulary_of_the_code() {
    let doc = read("docs/categories.md");
    let vocab = doc
        .split("## The vocabulary")
        .nth(1)
        .expect("a vocabulary section");
    let rows: Vec<[String; 3]> = vocab
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l
                .trim()
                .trim_matches('|')
                .split('|')
                .map(str::trim)
                .collect();
            let name = cells.first()?.strip_prefix('`')?.strip_suffix('`')?;
            Some([name, cells.get(1)?, cells.last()?].map(String::from))
        })
        .collect();
    // Each row of the code's one table: spelling, what failed (`Category::meaning`), action.
    let code: Vec<[String; 3]> = Category::ALL
        .iter()
        .map(|c| [c.as_str(), c.meaning(), c.action().as_str()].map(String::from))
        .collect();
    assert_eq!(rows, code, "docs/categories.md and model::Category differ");
    // The vocabulary only grows (a name is never removed); fewer rows is a table misread.
    assert!(rows.len() >= 25, "{} rows read", rows.len());
}

/// The team's own notes and tools live beside the repository, not in it: a user's clone has
/// none of them, so no file here (code, docs, fixtures, scripts, error messages) may name them.
/// The names are split so that this file does not name them either.
#[test]
fn no_file_points_at_documents_outside_the_repository() {
    let outside = [
        concat!("../", "shared"),
        concat!("/work/", "shared"),
        concat!("DESIGN", ".md"),
        concat!("REAL-", "PASTES"),
        concat!("FIELD-", "GUIDE"),
        concat!("STYLE", ".md"),
    ];
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for path in repo_files() {
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        for name in outside {
            if bytes.windows(name.len()).any(|w| w == name.as_bytes()) {
                found.push(format!(
                    "{}: {name}",
                    path.strip_prefix(root).unwrap().display()
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "points outside the repository:\n{}",
        found.join("\n")
    );
}

#[test]
fn readme_and_docs_point_inside_the_repository_for_the_contract() {
    let readme = read("README.md");
    for link in ["docs/json-schema.md", "docs/categories.md"] {
        assert!(
            readme.contains(&format!("]({link}")),
            "README lacks a link to {link}"
        );
    }
    // Every docs/ link in the README names a file that exists.
    for part in readme.split("](docs/").skip(1) {
        let target = part.split([')', '#']).next().unwrap();
        assert!(
            std::path::Path::new("docs").join(target).is_file(),
            "README links to a missing docs/{target}"
        );
    }
}

/// The repository's files, build output and local working sets left out.
fn repo_files() -> Vec<std::path::PathBuf> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let skip = |e: &walkdir::DirEntry| {
        let p = e.path().strip_prefix(root).unwrap_or(e.path());
        ![
            "target",
            ".git",
            "fuzz/target",
            "fuzz/corpus",
            "fuzz/artifacts",
        ]
        .iter()
        .any(|s| p == std::path::Path::new(s))
    };
    walkdir::WalkDir::new(root)
        .into_iter()
        .filter_entry(skip)
        .flatten()
        .filter(|e| e.file_type().is_file())
        .map(|e| e.into_path())
        .collect()
}

/// Text outside fenced code blocks (an example's `[x](y)` or path is not a link).
fn prose(md: &str) -> String {
    md.split("```").step_by(2).collect::<Vec<_>>().join("\n")
}

/// Every link in every `*.md` of the repository (`[text](target)` and `[ref]: target`) that
/// is not a URL or an anchor names a file or directory that exists, inside the repository.
#[test]
fn every_markdown_link_resolves_inside_the_repository() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .canonicalize()
        .unwrap();
    let mut bad = Vec::new();
    let mut links = 0;
    for file in repo_files() {
        if file.extension().is_none_or(|x| x != "md") {
            continue;
        }
        let text = prose(&std::fs::read_to_string(&file).unwrap_or_default());
        let inline = text.split("](").skip(1).filter_map(|p| p.split(')').next());
        let refs = text.lines().filter_map(|l| {
            let l = l.trim_start();
            let (label, target) = l.strip_prefix('[')?.split_once("]: ")?;
            (!label.contains(']')).then_some(target.trim())
        });
        for target in inline.chain(refs) {
            let target = target.split_whitespace().next().unwrap_or("");
            if target.is_empty()
                || target.starts_with('#')
                || target.contains("://")
                || target.starts_with("mailto:")
            {
                continue;
            }
            links += 1;
            let path = target.split('#').next().unwrap();
            let full = file.parent().unwrap().join(path);
            let ok = full.canonicalize().is_ok_and(|p| p.starts_with(&root));
            if !ok {
                bad.push(format!(
                    "{}: {target}",
                    file.strip_prefix(&root).unwrap_or(&file).display()
                ));
            }
        }
    }
    assert!(links > 25, "only {links} links read");
    assert!(
        bad.is_empty(),
        "links a clone cannot follow:\n{}",
        bad.join("\n")
    );
}

/// The pointers the code gives people — a `docs/….md` it cites, a README section it names
/// (`README "Fingerprints"`) — exist; and no file of the code or the documentation names an
/// absolute path of the machine it was written on.
#[test]
fn the_code_points_at_documents_and_sections_that_exist() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = read("README.md");
    // A README section is a heading or a paragraph that opens with its title in bold.
    let section = |name: &str| {
        readme.lines().any(|l| {
            (l.starts_with('#') && l.contains(name)) || l.starts_with(&format!("**{name}"))
        })
    };
    let machine = concat!("/wo", "rk/");
    let mut bad = Vec::new();
    let (mut docs, mut sections) = (0, 0);
    for file in repo_files() {
        let rel = file.strip_prefix(root).unwrap().to_path_buf();
        let is_src = rel.starts_with("src") && rel.extension().is_some_and(|x| x == "rs");
        let is_md = rel.extension().is_some_and(|x| x == "md") && !rel.starts_with("fixtures");
        if !is_src && !is_md {
            continue;
        }
        let raw = std::fs::read_to_string(&file).unwrap_or_default();
        if raw.contains(machine) {
            bad.push(format!("{}: an absolute path {machine}…", rel.display()));
        }
        if !is_src {
            continue;
        }
        // A comment's sentence read across its lines: `README "Which directories are` ⏎
        // `/// runs"` names one section.
        let text = raw
            .lines()
            .map(|l| l.trim_start().trim_start_matches(['/', '!']).trim_start())
            .collect::<Vec<_>>()
            .join(" ");
        for part in text.split("docs/").skip(1) {
            let name: String = part
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
                .collect();
            let name = name.trim_end_matches('.');
            if !name.ends_with(".md") {
                continue;
            }
            docs += 1;
            if !root.join("docs").join(name).is_file() {
                bad.push(format!("{}: docs/{name} does not exist", rel.display()));
            }
        }
        for lead in ["README \"", "README.md \"", "README.md \\\""] {
            for part in text.split(lead).skip(1) {
                let name: String = part
                    .chars()
                    .take_while(|&c| c != '"' && c != '\\')
                    .collect();
                sections += 1;
                if !section(&name) {
                    bad.push(format!("{}: README has no section {name:?}", rel.display()));
                }
            }
        }
    }
    assert!(
        docs >= 10 && sections >= 4,
        "{docs} docs/ and {sections} README pointers read"
    );
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// A module head that says its module never imports the rule engine (`sources`, `capture`) is
/// kept by this test, not by care: no file of the module names `crate::rules`. (One crate has
/// no compiler-kept boundary between its own modules; `pub(crate)` keeps the crate's from
/// the outside.)
#[test]
fn modules_that_never_import_the_rule_engine_do_not() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut heads = 0;
    let mut bad = Vec::new();
    for file in repo_files() {
        let rel = file.strip_prefix(root).unwrap();
        if !rel.starts_with("src") || file.file_name().is_none_or(|n| n != "mod.rs") {
            continue;
        }
        let head: String = std::fs::read_to_string(&file)
            .unwrap_or_default()
            .lines()
            .take_while(|l| l.starts_with("//!"))
            .flat_map(|l| l.trim_start_matches("//!").split_whitespace())
            .collect::<Vec<_>>()
            .join(" ");
        if !head.contains("never import the rule engine")
            && !head.contains("never imports the rule engine")
        {
            continue;
        }
        heads += 1;
        for f in walkdir::WalkDir::new(file.parent().unwrap())
            .into_iter()
            .flatten()
        {
            let text = std::fs::read_to_string(f.path()).unwrap_or_default();
            let uses = text.contains("crate::rules")
                || text.contains("use crate::{")
                    && text
                        .split("use crate::{")
                        .skip(1)
                        .any(|u| u.split("};").next().unwrap_or("").contains("rules"));
            if uses {
                bad.push(f.path().strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    assert!(heads >= 2, "{heads} module heads say so");
    assert!(
        bad.is_empty(),
        "imports the rule engine: {}",
        bad.join(", ")
    );
}
