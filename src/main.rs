//! The `trainwreck` binary: parse arguments, run the library, exit with its status.

use clap::Parser;

fn main() {
    let cli = trainwreck::cli::Cli::parse();
    std::process::exit(trainwreck::cli::run(cli));
}
