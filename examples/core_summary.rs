//! Print what trainwreck reads from a core (summary JSON, facts, warnings) and how long it took:
//! `cargo run --release --example core_summary -- CORE [SYSROOT]`. A debugging and benchmark aid;
//! the CLI proper lives in `trainwreck analyze`.

use std::path::{Path, PathBuf};
use std::time::Instant;
use trainwreck::sources::elfcore::{CoreOptions, analyze_core};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(core) = args.next() else {
        eprintln!("usage: core_summary CORE [SYSROOT]");
        std::process::exit(2);
    };
    let opts = CoreOptions {
        sysroot: args.next().map(PathBuf::from),
        ..CoreOptions::default()
    };
    let t = Instant::now();
    let a = analyze_core(Path::new(&core), &opts);
    let took = t.elapsed();
    match serde_json::to_string_pretty(&a.summary) {
        Ok(s) => println!("{s}"),
        Err(e) => eprintln!("summary: {e}"),
    }
    for f in &a.facts {
        println!("{} = {}", f.name, f.value);
    }
    for w in &a.warnings {
        println!("warning: {}", w.en);
    }
    eprintln!("analysed in {:.1} ms", took.as_secs_f64() * 1e3);
}
