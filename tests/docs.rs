//! The documentation that lives in this repository agrees with the code: the category
//! vocabulary of docs/categories.md is the one the rules are checked against (with the same
//! action classes), and the README points into docs/, not outside the repository.

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
    let rows: Vec<(String, String)> = vocab
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l
                .trim()
                .trim_matches('|')
                .split('|')
                .map(str::trim)
                .collect();
            let name = cells.first()?.strip_prefix('`')?.strip_suffix('`')?;
            Some((name.to_string(), cells.last()?.to_string()))
        })
        .collect();
    let code: Vec<(String, String)> = Category::ALL
        .iter()
        .map(|c| (c.as_str().to_string(), c.action().as_str().to_string()))
        .collect();
    assert_eq!(rows, code, "docs/categories.md and model::Category differ");
    assert_eq!(rows.len(), 25);
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
    // Build output, git's own store and libFuzzer's local working sets are not the project's.
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
    let mut found = Vec::new();
    for e in walkdir::WalkDir::new(root)
        .into_iter()
        .filter_entry(skip)
        .flatten()
    {
        if !e.file_type().is_file() {
            continue;
        }
        let Ok(bytes) = std::fs::read(e.path()) else {
            continue;
        };
        for name in outside {
            if bytes.windows(name.len()).any(|w| w == name.as_bytes()) {
                found.push(format!(
                    "{}: {name}",
                    e.path().strip_prefix(root).unwrap().display()
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
