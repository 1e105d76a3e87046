//! Fits the confidence calibration on every labelled fixture and prints `data/calibration.toml`
//! (docs/calibration.md says how it is fitted and measured):
//!
//! ```sh
//! cargo run --release --example calibrate > data/calibration.toml
//! ```

#[path = "../tests/labelled/mod.rs"]
mod labelled;

fn main() {
    let points = labelled::calibration_points();
    let cases = points
        .iter()
        .map(|(c, _)| c)
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let p: Vec<_> = points.into_iter().map(|(_, p)| p).collect();
    print!(
        "{}",
        trainwreck::correlate::calibrate::fit(&p, cases).to_toml()
    );
}
