//! The binary run in a clean environment: no locale, colour, width, terminal or history of the
//! machine running the tests leaks in (a developer's `LANG=zh_CN.UTF-8` or failure history
//! would change what the reports say), then the test's own variables. Shared by the test
//! crates that `mod clean_env;` it; each uses a subset.
#![allow(dead_code)]

use std::process::{Command, Stdio};

/// A Chinese locale, as a user of the Chinese reports has it.
pub const ZH: &[(&str, &str)] = &[("LANG", "zh_CN.UTF-8")];

/// `command` prepared: the variables that change reports removed, a history directory that
/// does not exist, stdin empty, then `env`.
pub fn prepare(c: &mut Command, env: &[(&str, &str)]) {
    for k in [
        "LANG",
        "LANGUAGE",
        "LC_ALL",
        "LC_MESSAGES",
        "NO_COLOR",
        "COLUMNS",
        "TERM",
        "TRAINWRECK_DB",
        "TRAINWRECK_DB_TIMEOUT_MS",
    ] {
        c.env_remove(k);
    }
    c.env("XDG_DATA_HOME", "/nonexistent/trainwreck-clean-env-test");
    c.stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
}

/// Run trainwreck with `args` in the clean environment plus `env` (from the package root,
/// where cargo runs tests): (status, stdout, stderr).
pub fn tw(env: &[(&str, &str)], args: &[&str]) -> (i32, String, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_trainwreck"));
    prepare(&mut c, env);
    let out = c
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .expect("run trainwreck");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
