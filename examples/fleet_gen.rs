//! Prints the synthetic fleet of the history's tests (`tests/fleet_gen`) as `history export`
//! JSON Lines: 41 hosts × 200 runs with a planted bad host and a planted bad GPU, from a fixed
//! seed. For a fleet page to look at (`scripts/screenshots.sh`), not for any real history:
//!
//! ```sh
//! cargo run --example fleet_gen > fleet.jsonl
//! trainwreck history import fleet.jsonl --db fleet.db
//! trainwreck history report --db fleet.db --html > fleet.html
//! ```

#[path = "../tests/fleet_gen/mod.rs"]
mod fleet_gen;

fn main() {
    print!("{}", fleet_gen::synthetic_fleet());
}
