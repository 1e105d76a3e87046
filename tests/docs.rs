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

#[test]
fn readme_and_docs_point_inside_the_repository_for_the_contract() {
    for p in ["README.md", "docs/json-schema.md", "docs/categories.md"] {
        let text = read(p);
        assert!(
            !text.contains("DESIGN.md"),
            "{p} still points at DESIGN.md outside the repository"
        );
    }
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
