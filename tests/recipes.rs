//! The recipes run as their systems would run them. CI and schedulers, on the corpus: the
//! GitHub Action's steps (read from action.yml, with the variables a runner sets), the GitLab
//! template's script (with GitLab's variables), the Slurm epilog (with a faked Slurm: its
//! variables and `scontrol`/`sacct` on PATH), and the Kubernetes Job's container scripts;
//! the Kubernetes objects are checked for the fields their schemas require. Each test checks
//! the files the recipe writes against what the binary itself says about the same logs.
//! Contributors' recipes (CONTRIBUTING.md): the files and functions it names exist, a
//! throwaway rule file given to `--rules` is checked by `rules test` and fires in `analyze`,
//! and every category, input kind and output format has what its recipe says it needs.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use yaml_rust2::{Yaml, YamlLoader};

const SEED: &str = "fixtures/seed-bus-error";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_trainwreck")
}

/// PATH with the built binary's directory first.
fn path_with(dirs: &[&Path]) -> String {
    let mut parts: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    parts.push(Path::new(bin()).parent().unwrap().display().to_string());
    parts.push(std::env::var("PATH").unwrap_or_default());
    parts.join(":")
}

fn yaml(file: &str) -> Vec<Yaml> {
    let text = std::fs::read_to_string(root().join(file)).unwrap();
    YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"))
}

fn s<'a>(y: &'a Yaml, what: &str) -> &'a str {
    y.as_str()
        .unwrap_or_else(|| panic!("{what} is not a string: {y:?}"))
}

/// What the binary says about `path` directly.
fn direct(args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .env("LANG", "C")
        .env("TRAINWRECK_DB", "")
        .current_dir(root())
        .output()
        .unwrap()
}

fn json_of(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).expect("JSON on stdout")
}

fn text(o: &[u8]) -> String {
    String::from_utf8_lossy(o).into_owned()
}

/// `KEY=VALUE` lines (GITHUB_OUTPUT, a dotenv file).
fn pairs(file: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(file)
        .unwrap_or_else(|e| panic!("{}: {e}", file.display()))
        .lines()
        .map(|l| {
            let (k, v) = l
                .split_once('=')
                .unwrap_or_else(|| panic!("not KEY=VALUE: {l}"));
            (k.to_string(), v.to_string())
        })
        .collect()
}

fn action_status(action: &str) -> i32 {
    trainwreck::model::Action::ALL
        .iter()
        .find(|a| a.as_str() == action)
        .unwrap_or_else(|| panic!("unknown action {action}"))
        .exit_status()
}

// ---------------------------------------------------------------- GitHub Action

/// A composite action's step, as the runner would run it.
struct GithubRun {
    status: i32,
    stdout: String,
    stderr: String,
    summary: String,
    outputs: BTreeMap<String, String>,
    temp: tempfile::TempDir,
}

/// Run action.yml's steps with `inputs` (the rest take their defaults), as a runner does:
/// `${{ inputs.X }}` in `env` and `if`, bash -eo pipefail, the GITHUB_* files.
fn run_action(inputs: &[(&str, &str)], extra_path: &[&Path]) -> GithubRun {
    let doc = &yaml("action.yml")[0];
    assert_eq!(s(&doc["runs"]["using"], "runs.using"), "composite");
    let mut values = BTreeMap::new();
    for (k, v) in doc["inputs"].as_hash().expect("inputs") {
        let k = s(k, "input name").to_string();
        if let Some(d) = v["default"].as_str() {
            values.insert(k.clone(), d.to_string());
        }
        if v["required"].as_bool() == Some(true) {
            assert!(
                inputs.iter().any(|(n, _)| *n == k),
                "required input {k} not given"
            );
        }
    }
    for (k, v) in inputs {
        assert!(doc["inputs"][*k].as_hash().is_some(), "no input {k}");
        values.insert(k.to_string(), v.to_string());
    }
    let expand = |t: &str| -> String {
        let mut out = t.to_string();
        for (k, v) in &values {
            out = out.replace(&format!("${{{{ inputs.{k} }}}}"), v);
        }
        assert!(
            !out.contains("${{"),
            "an expression the test does not know: {out}"
        );
        out
    };
    let temp = tempfile::tempdir().unwrap();
    let summary = temp.path().join("step_summary.md");
    let output = temp.path().join("output");
    std::fs::write(&summary, "").unwrap();
    std::fs::write(&output, "").unwrap();
    let (mut status, mut stdout, mut stderr) = (0, String::new(), String::new());
    for step in doc["runs"]["steps"].as_vec().expect("steps") {
        if let Some(cond) = step["if"].as_str() {
            // The only condition form the action uses: `inputs.X == 'Y'`.
            let (lhs, rhs) = cond
                .split_once(" == ")
                .expect("an `inputs.X == 'Y'` condition");
            let name = lhs.trim().strip_prefix("inputs.").expect("inputs.X");
            if values[name] != rhs.trim().trim_matches('\'') {
                continue;
            }
        }
        assert_eq!(s(&step["shell"], "shell"), "bash");
        let mut c = Command::new("bash");
        c.args(["--noprofile", "--norc", "-eo", "pipefail", "-c"])
            .arg(expand(s(&step["run"], "run")))
            .current_dir(root())
            .env("PATH", path_with(extra_path))
            .env("LANG", "C")
            .env("TRAINWRECK_DB", "")
            .env("CI", "true")
            .env("GITHUB_ACTIONS", "true")
            .env("GITHUB_WORKSPACE", root())
            .env("GITHUB_ACTION_PATH", root())
            .env("RUNNER_TEMP", temp.path())
            .env("GITHUB_STEP_SUMMARY", &summary)
            .env("GITHUB_OUTPUT", &output);
        if let Some(env) = step["env"].as_hash() {
            for (k, v) in env {
                c.env(s(k, "env name"), expand(s(v, "env value")));
            }
        }
        let o = c.output().unwrap();
        stdout.push_str(&text(&o.stdout));
        stderr.push_str(&text(&o.stderr));
        status = o.status.code().expect("an exit status");
        if status != 0 {
            break;
        }
    }
    // Every output of the action is one its step writes.
    let outputs = pairs(&output);
    for (name, o) in doc["outputs"].as_hash().expect("outputs") {
        let v = s(&o["value"], "output value");
        let key = v
            .trim_start_matches("${{ steps.trainwreck.outputs.")
            .trim_end_matches(" }}");
        assert_eq!(key, s(name, "output name"));
        assert!(
            outputs.contains_key(key) || status == 2,
            "output {key} not written: {outputs:?}\n{stderr}"
        );
    }
    GithubRun {
        status,
        stdout,
        stderr,
        summary: std::fs::read_to_string(&summary).unwrap(),
        outputs,
        temp,
    }
}

#[test]
fn github_action_on_the_seed_writes_summary_annotations_outputs_and_exit_status() {
    let r = run_action(&[("path", SEED), ("install", "false")], &[]);
    let expected = direct(&["analyze", SEED, "--exit-code", "action"])
        .status
        .code();
    assert_eq!(Some(r.status), expected, "{}", r.stderr);
    assert_eq!(r.status, 12, "the seed's fix is a config fix");
    let md = direct(&["analyze", SEED, "--format", "markdown"]);
    assert_eq!(
        r.summary,
        text(&md.stdout),
        "the job summary is the Markdown report"
    );
    let gh = direct(&["analyze", SEED, "--format", "github"]);
    assert!(
        r.stdout.contains(&text(&gh.stdout)),
        "the annotations are the github format's:\n{}",
        r.stdout
    );
    assert!(
        r.stdout
            .starts_with("::error file=fixtures/seed-bus-error/train.log,line=")
    );
    let report = json_of(&direct(&["analyze", SEED, "--format", "json"]));
    let top = &report["findings"][0];
    assert_eq!(r.outputs["verdict"], "diagnosed");
    assert_eq!(
        r.outputs["fingerprint"],
        report["fingerprint"].as_str().unwrap()
    );
    assert_eq!(r.outputs["code"], top["code"].as_str().unwrap());
    assert_eq!(r.outputs["cause"], top["title"].as_str().unwrap());
    assert_eq!(r.outputs["action"], top["action"].as_str().unwrap());
    assert_eq!(r.outputs["exit-code"], "12");
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(&r.outputs["report"]).unwrap()).unwrap();
    assert_eq!(written["fingerprint"], report["fingerprint"]);
    assert!(r.temp.path().join("trainwreck/report.md").is_file());
}

#[test]
fn github_action_outputs_match_the_binary_for_each_action_class_of_the_corpus() {
    // One corpus case per action class (the triage's example run of a group of each class),
    // so the outputs are read from reports of every shape: no finding, an engine finding, a
    // rule's finding.
    let t = json_of(&direct(&["triage", "fixtures/corpus", "--format", "json"]));
    let mut by_action = BTreeMap::new();
    for g in t["groups"].as_array().unwrap() {
        let action = g["action"].as_str().unwrap().to_string();
        by_action
            .entry(action)
            .or_insert_with(|| g["example"].as_str().unwrap().to_string());
    }
    assert!(
        by_action.len() >= 4,
        "the corpus spans action classes: {by_action:?}"
    );
    for (class, case) in &by_action {
        let rel = Path::new(case)
            .strip_prefix(root())
            .unwrap_or(Path::new(case))
            .to_str()
            .unwrap()
            .to_string();
        let r = run_action(&[("path", &rel), ("install", "false")], &[]);
        let report = json_of(&direct(&["analyze", &rel, "--format", "json"]));
        let fp = report["fingerprint"].as_str().unwrap_or("");
        assert_eq!(r.outputs["fingerprint"], fp, "{rel}");
        assert_eq!(
            r.outputs["verdict"],
            report["verdict"].as_str().unwrap(),
            "{rel}"
        );
        let top = &report["findings"][0];
        let action = top["action"]
            .as_str()
            .unwrap_or(if report["verdict"] == "no_failure" {
                "none"
            } else {
                "investigate"
            });
        assert_eq!(r.outputs["action"], action, "{rel} (a group of {class})");
        assert_eq!(r.status, action_status(action), "{rel}: {}", r.stderr);
        assert_eq!(
            r.outputs["code"],
            top["code"].as_str().unwrap_or(""),
            "{rel}"
        );
        assert_eq!(
            r.outputs["cause"],
            top["title"].as_str().unwrap_or(""),
            "{rel}"
        );
        let errors = r
            .stdout
            .lines()
            .filter(|l| l.starts_with("::error"))
            .count();
        assert_eq!(errors > 0, action != "none", "{rel}: {}", r.stdout);
    }
}

#[test]
fn github_action_triage_annotates_each_failed_group_and_exits_with_the_largest() {
    let r = run_action(
        &[
            ("path", "fixtures/corpus"),
            ("mode", "triage"),
            ("install", "false"),
        ],
        &[],
    );
    let t = json_of(&direct(&["triage", "fixtures/corpus", "--format", "json"]));
    let failed: Vec<&Value> = t["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["verdict"] != "no_failure")
        .collect();
    let first = failed[0];
    assert_eq!(
        r.status,
        action_status(first["action"].as_str().unwrap()),
        "{}",
        r.stderr
    );
    assert_eq!(
        r.outputs["fingerprint"],
        first["fingerprint"].as_str().unwrap()
    );
    assert_eq!(r.outputs["cause"], first["title"].as_str().unwrap_or(""));
    let errors: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| l.starts_with("::error"))
        .collect();
    assert_eq!(errors.len(), failed.len(), "{}", r.stdout);
    for (line, g) in errors.iter().zip(&failed) {
        assert!(line.contains(g["fingerprint"].as_str().unwrap()), "{line}");
        assert!(
            line.contains(&format!("::{} run(s): ", g["count"])),
            "{line}"
        );
    }
    let md = direct(&["triage", "fixtures/corpus", "--format", "markdown"]);
    assert_eq!(r.summary, text(&md.stdout));
}

#[test]
fn github_action_exit_code_never_succeeds_and_a_missing_path_is_a_usage_error() {
    let r = run_action(
        &[("path", SEED), ("install", "false"), ("exit-code", "never")],
        &[],
    );
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(
        r.outputs["exit-code"], "12",
        "the output still tells the class"
    );
    let r = run_action(&[("path", "no/such/run"), ("install", "false")], &[]);
    assert_eq!(r.status, 2);
    assert!(r.stderr.contains("no/such/run"), "{}", r.stderr);
    assert!(r.summary.is_empty());
}

#[test]
fn github_action_install_step_pip_installs_the_package_input() {
    // A python3 that records what it was asked, then lets the real binary on PATH serve.
    let fake = tempfile::tempdir().unwrap();
    let log = fake.path().join("python3.args");
    let script = format!("#!/bin/sh\necho \"$*\" >> '{}'\n", log.display());
    let py = fake.path().join("python3");
    std::fs::write(&py, script).unwrap();
    make_executable(&py);
    let r = run_action(
        &[
            ("path", SEED),
            (
                "package",
                "dist/trainwreck-0.1.0-py3-none-manylinux_2_17_x86_64.whl",
            ),
        ],
        &[fake.path()],
    );
    assert_eq!(r.status, 12, "{}", r.stderr);
    let args = std::fs::read_to_string(&log).expect("the install step ran python3");
    assert_eq!(
        args.trim(),
        "-m pip install --disable-pip-version-check --quiet dist/trainwreck-0.1.0-py3-none-manylinux_2_17_x86_64.whl"
    );
}

fn make_executable(p: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

// ---------------------------------------------------------------- GitLab CI

#[test]
fn gitlab_template_script_writes_its_artifacts_and_dotenv_report() {
    let doc = &yaml("deploy/gitlab/trainwreck.gitlab-ci.yml")[0];
    let job = &doc[".trainwreck"];
    assert!(job.as_hash().is_some(), "a .trainwreck template");
    let before: Vec<&str> = job["before_script"]
        .as_vec()
        .unwrap()
        .iter()
        .map(|l| s(l, "before_script"))
        .collect();
    assert!(
        before
            .iter()
            .any(|l| l.contains("pip install") && l.contains("$TRAINWRECK_PACKAGE"))
    );
    let project = tempfile::tempdir().unwrap();
    // GitLab checks the project out into CI_PROJECT_DIR and runs the script there.
    let run = project.path().join("logs");
    copy_dir(&root().join(SEED), &run);
    let mut vars: BTreeMap<String, String> = job["variables"]
        .as_hash()
        .unwrap()
        .iter()
        .map(|(k, v)| (s(k, "name").to_string(), s(v, "value").to_string()))
        .collect();
    assert_eq!(vars["TRAINWRECK_PATH"], "logs/");
    vars.insert("TRAINWRECK_BIN".into(), bin().into());
    let mut status = 0;
    let mut stdout = String::new();
    for line in job["script"].as_vec().unwrap() {
        let o = Command::new("sh")
            .args(["-c", s(line, "script line")])
            .current_dir(project.path())
            .envs(&vars)
            .env("PATH", path_with(&[]))
            .env("PYTHONPATH", root().join("python"))
            .env("LANG", "C")
            .env("TRAINWRECK_DB", "")
            .env("CI", "true")
            .env("GITLAB_CI", "true")
            .env("CI_PROJECT_DIR", project.path())
            .env("CI_JOB_ID", "4242")
            .output()
            .unwrap();
        status = o.status.code().unwrap();
        stdout.push_str(&text(&o.stdout));
        assert!(status == 0 || status >= 10, "{}", text(&o.stderr));
    }
    let expected = direct(&["analyze", SEED, "--exit-code", "action"])
        .status
        .code();
    assert_eq!(Some(status), expected);
    assert!(stdout.contains("section_start:") && stdout.contains("section_end:"));
    // The files the template's artifacts and reports name, where GitLab collects them.
    let artifacts = &job["artifacts"];
    assert_eq!(s(&artifacts["when"], "artifacts.when"), "always");
    for p in artifacts["paths"].as_vec().unwrap() {
        assert!(project.path().join(s(p, "path")).is_dir(), "{p:?}");
    }
    let junit = project
        .path()
        .join(s(&artifacts["reports"]["junit"], "junit"));
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.starts_with("<?xml") && xml.contains("<testsuite"),
        "{xml}"
    );
    let dotenv = project
        .path()
        .join(s(&artifacts["reports"]["dotenv"], "dotenv"));
    let env = pairs(&dotenv);
    let report = json_of(&direct(&["analyze", SEED, "--format", "json"]));
    assert_eq!(env["TRAINWRECK_VERDICT"], "diagnosed");
    assert_eq!(
        env["TRAINWRECK_FINGERPRINT"],
        report["fingerprint"].as_str().unwrap()
    );
    assert_eq!(env["TRAINWRECK_STATUS"], status.to_string());
    for k in env.keys() {
        // GitLab's dotenv rules: a variable name of letters, digits and `_`.
        assert!(
            k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "{k}"
        );
        assert!(
            !vars.contains_key(k),
            "{k} would override the template's own variable"
        );
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &t);
        } else {
            std::fs::copy(e.path(), t).unwrap();
        }
    }
}

// ---------------------------------------------------------------- Slurm epilog

/// A faked Slurm: `scontrol` and `sacct` scripts that print what a real one would for this
/// job (or nothing), and log each call.
struct Slurm {
    dir: tempfile::TempDir,
    bin: PathBuf,
    calls: PathBuf,
}

fn slurm(scontrol: Option<&str>, sacct: Option<&str>) -> Slurm {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let calls = dir.path().join("calls");
    for (name, out) in [("scontrol", scontrol), ("sacct", sacct)] {
        let body = match out {
            Some(o) => format!(
                "#!/bin/sh\necho \"{name} $*\" >> '{}'\ncat <<'EOF'\n{o}\nEOF\n",
                calls.display()
            ),
            None => format!(
                "#!/bin/sh\necho \"{name} $*\" >> '{}'\necho 'slurm_load_jobs error: Invalid job id specified' >&2\nexit 1\n",
                calls.display()
            ),
        };
        let p = bin.join(name);
        std::fs::write(&p, body).unwrap();
        make_executable(&p);
    }
    Slurm { dir, bin, calls }
}

fn this_host() -> String {
    let o = Command::new("hostname").arg("-s").output().unwrap();
    text(&o.stdout).trim().to_string()
}

/// `scontrol -o show job` for job 42, its output in `out`.
fn job_line(state: &str, exit: &str, out: &Path, batch: &str) -> String {
    format!(
        "JobId=42 JobName=train UserId=alice(1000) GroupId=alice(1000) Priority=1 \
         JobState={state} Reason=NonZeroExitCode Dependency=(null) Requeue=0 Restarts=0 \
         BatchFlag=1 ExitCode={exit} RunTime=00:12:03 TimeLimit=1-00:00:00 \
         Partition=gpu NodeList={batch} BatchHost={batch} NumNodes=1 NumCPUs=16 \
         Command={dir}/train.sbatch WorkDir={dir} StdErr={out} StdIn=/dev/null StdOut={out}",
        dir = out.parent().unwrap().display(),
        out = out.display(),
    )
}

fn epilog(s: &Slurm, env: &[(&str, &str)], tw: Option<&str>) -> Output {
    let mut c = Command::new("sh");
    c.arg(root().join("deploy/slurm/epilog.sh"))
        .env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", s.bin.display()))
        .env("TRAINWRECK_EPILOG_CONF", s.dir.path().join("none"))
        .env("TRAINWRECK_DB", s.dir.path().join("history.db"))
        .env("LANG", "C")
        .envs(env.iter().copied());
    c.env("TRAINWRECK", tw.unwrap_or(bin()));
    c.output().unwrap()
}

/// A job's output file: the seed's training log, as a job's `slurm-42.out`.
fn job_output(s: &Slurm) -> PathBuf {
    let work = s.dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let out = work.join("slurm-42.out");
    std::fs::copy(root().join(SEED).join("train.log"), &out).unwrap();
    out
}

#[test]
fn epilog_diagnoses_a_failed_job_records_it_and_leaves_the_report_beside_its_output() {
    let host = this_host();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("work/slurm-42.out");
    let s = slurm(Some(&job_line("FAILED", "1:0", &out, &host)), None);
    std::fs::create_dir(out.parent().unwrap()).unwrap();
    std::fs::copy(root().join(SEED).join("train.log"), &out).unwrap();
    let o = epilog(
        &s,
        &[
            ("SLURM_JOB_ID", "42"),
            ("SLURM_JOB_EXIT_CODE2", "1:0"),
            ("SLURM_JOB_NODELIST", &host),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0));
    assert!(o.stdout.is_empty(), "an epilog prints nothing to stdout");
    let report = out.parent().unwrap().join("trainwreck-42.md");
    let md =
        std::fs::read_to_string(&report).unwrap_or_else(|e| panic!("{e}: {}", text(&o.stderr)));
    let direct_md = direct(&["analyze", out.to_str().unwrap(), "--format", "markdown"]);
    let heading = text(&direct_md.stdout).lines().next().unwrap().to_string();
    assert!(md.starts_with(&heading), "{md}");
    assert!(text(&o.stderr).contains("report in"), "{}", text(&o.stderr));
    // Recorded in the team's history, under the job's id and host.
    let export = Command::new(bin())
        .args(["history", "export", "--db"])
        .arg(s.dir.path().join("history.db"))
        .output()
        .unwrap();
    let runs: Vec<Value> = text(&export.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|v: &Value| v["type"] != "note")
        .collect();
    assert_eq!(runs.len(), 1, "{}", text(&export.stdout));
    let run = runs[0].to_string();
    assert!(run.contains("\"42\""), "the job id is recorded: {run}");
    assert!(run.contains(&host), "the host is recorded: {run}");
    let fp = json_of(&direct(&[
        "analyze",
        out.to_str().unwrap(),
        "--format",
        "json",
    ]));
    assert!(run.contains(fp["fingerprint"].as_str().unwrap()), "{run}");
}

#[test]
fn epilog_is_silent_and_asks_nothing_when_slurm_says_the_job_succeeded() {
    let s = slurm(Some("must not be asked"), Some("must not be asked"));
    let out = job_output(&s);
    let o = epilog(
        &s,
        &[("SLURM_JOB_ID", "42"), ("SLURM_JOB_EXIT_CODE2", "0:0")],
        None,
    );
    assert_eq!(o.status.code(), Some(0));
    assert!(
        o.stdout.is_empty() && o.stderr.is_empty(),
        "{}",
        text(&o.stderr)
    );
    assert!(!s.calls.exists(), "scontrol/sacct were called");
    assert!(!out.parent().unwrap().join("trainwreck-42.md").exists());
}

#[test]
fn epilog_asks_scontrol_when_slurm_sets_no_exit_code() {
    let host = this_host();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("slurm-42.out");
    std::fs::copy(root().join(SEED).join("train.log"), &out).unwrap();
    // Succeeded: silent, no report.
    let s = slurm(Some(&job_line("COMPLETED", "0:0", &out, &host)), None);
    let o = epilog(&s, &[("SLURM_JOB_ID", "42")], None);
    assert_eq!(o.status.code(), Some(0));
    assert!(o.stderr.is_empty(), "{}", text(&o.stderr));
    assert!(!dir.path().join("trainwreck-42.md").exists());
    // Cancelled by a person: not a failure to explain.
    let s = slurm(Some(&job_line("CANCELLED", "0:15", &out, &host)), None);
    let o = epilog(&s, &[("SLURM_JOB_ID", "42")], None);
    assert!(o.stderr.is_empty() && !dir.path().join("trainwreck-42.md").exists());
    // Failed, by scontrol's word: diagnosed.
    let s = slurm(Some(&job_line("FAILED", "1:0", &out, &host)), None);
    let o = epilog(&s, &[("SLURM_JOB_ID", "42")], None);
    assert_eq!(o.status.code(), Some(0));
    assert!(
        dir.path().join("trainwreck-42.md").is_file(),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn epilog_on_another_node_of_the_job_leaves_it_to_the_batch_host() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("slurm-42.out");
    std::fs::copy(root().join(SEED).join("train.log"), &out).unwrap();
    let s = slurm(Some(&job_line("FAILED", "1:0", &out, "gpu-node-017")), None);
    let o = epilog(
        &s,
        &[("SLURM_JOB_ID", "42"), ("SLURM_JOB_EXIT_CODE2", "1:0")],
        None,
    );
    assert_eq!(o.status.code(), Some(0));
    assert!(o.stderr.is_empty(), "{}", text(&o.stderr));
    assert!(!dir.path().join("trainwreck-42.md").exists());
    // The controller's epilog runs once for the job: it diagnoses wherever the batch host was.
    let o = epilog(
        &s,
        &[
            ("SLURM_JOB_ID", "42"),
            ("SLURM_JOB_EXIT_CODE2", "1:0"),
            ("SLURM_SCRIPT_CONTEXT", "epilog_slurmctld"),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0));
    assert!(
        dir.path().join("trainwreck-42.md").is_file(),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn epilog_never_fails_the_node_when_it_cannot_diagnose() {
    let host = this_host();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("slurm-42.out");
    // The output file is missing.
    let s = slurm(Some(&job_line("FAILED", "1:0", &out, &host)), None);
    let o = epilog(
        &s,
        &[("SLURM_JOB_ID", "42"), ("SLURM_JOB_EXIT_CODE", "256")],
        None,
    );
    assert_eq!(o.status.code(), Some(0));
    assert!(
        text(&o.stderr).contains("not readable here"),
        "{}",
        text(&o.stderr)
    );
    // No trainwreck binary.
    std::fs::copy(root().join(SEED).join("train.log"), &out).unwrap();
    let o = epilog(
        &s,
        &[("SLURM_JOB_ID", "42"), ("SLURM_JOB_EXIT_CODE", "256")],
        Some("/nonexistent/trainwreck"),
    );
    assert_eq!(o.status.code(), Some(0));
    assert!(
        text(&o.stderr).contains("no '/nonexistent/trainwreck'"),
        "{}",
        text(&o.stderr)
    );
    // Neither scontrol nor the exit variables: sacct's state and work dir.
    let s = slurm(None, Some(&format!("FAILED|1:0|{}", dir.path().display())));
    let o = epilog(&s, &[("SLURM_JOB_ID", "42")], None);
    assert_eq!(o.status.code(), Some(0));
    let calls = std::fs::read_to_string(&s.calls).unwrap();
    assert!(calls.contains("sacct"), "{calls}");
    assert!(
        dir.path().join("trainwreck-42.md").is_file(),
        "{}",
        text(&o.stderr)
    );
}

// ---------------------------------------------------------------- Kubernetes

/// The fields the Kubernetes API requires of the objects the recipes use (and the ones a
/// Job's pod template must have), checked in every document of every file.
fn check_object(file: &str, o: &Yaml) {
    let kind = s(&o["kind"], "kind");
    let api = s(&o["apiVersion"], "apiVersion");
    let name = s(&o["metadata"]["name"], "metadata.name");
    let dns = |n: &str| {
        !n.is_empty()
            && n.len() <= 63
            && n.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && !n.starts_with('-')
            && !n.ends_with('-')
    };
    assert!(dns(name), "{file}: name {name:?} is not a DNS label");
    match kind {
        "Job" => {
            assert_eq!(api, "batch/v1", "{file}");
            let pod = &o["spec"]["template"]["spec"];
            let restart = s(&pod["restartPolicy"], "restartPolicy");
            assert!(
                ["Never", "OnFailure"].contains(&restart),
                "{file}: a Job's pods restart Never or OnFailure"
            );
            if let Some(b) = o["spec"]["backoffLimit"].as_i64() {
                assert!(b >= 0);
            }
            check_pod(file, pod);
        }
        "PersistentVolumeClaim" => {
            assert_eq!(api, "v1", "{file}");
            let modes = o["spec"]["accessModes"].as_vec().expect("accessModes");
            for m in modes {
                assert!(
                    [
                        "ReadWriteOnce",
                        "ReadOnlyMany",
                        "ReadWriteMany",
                        "ReadWriteOncePod"
                    ]
                    .contains(&s(m, "access mode")),
                    "{file}"
                );
            }
            let size = s(&o["spec"]["resources"]["requests"]["storage"], "storage");
            assert!(
                size.ends_with("Gi") || size.ends_with("Mi"),
                "{file}: {size}"
            );
        }
        other => panic!("{file}: a {other} the test does not check"),
    }
}

fn check_pod(file: &str, pod: &Yaml) {
    let volumes: BTreeMap<&str, &Yaml> = pod["volumes"]
        .as_vec()
        .map(|v| {
            v.iter()
                .map(|x| (s(&x["name"], "volume name"), x))
                .collect()
        })
        .unwrap_or_default();
    for v in volumes.values() {
        let sources = [
            "emptyDir",
            "persistentVolumeClaim",
            "configMap",
            "secret",
            "hostPath",
        ];
        let n = sources.iter().filter(|k| !v[**k].is_badvalue()).count();
        assert_eq!(n, 1, "{file}: a volume has exactly one source: {v:?}");
        if !v["persistentVolumeClaim"].is_badvalue() {
            s(&v["persistentVolumeClaim"]["claimName"], "claimName");
        }
    }
    let containers = pod["containers"].as_vec().expect("containers");
    assert!(!containers.is_empty(), "{file}: a pod needs a container");
    let init = pod["initContainers"].as_vec().cloned().unwrap_or_default();
    let mut names = std::collections::BTreeSet::new();
    for c in containers.iter().chain(init.iter()) {
        let name = s(&c["name"], "container name");
        assert!(names.insert(name), "{file}: container {name} twice");
        s(&c["image"], "image");
        for key in ["command", "args"] {
            if !c[key].is_badvalue() {
                for a in c[key].as_vec().expect("a list of strings") {
                    s(a, key);
                }
            }
        }
        for e in c["env"].as_vec().cloned().unwrap_or_default() {
            s(&e["name"], "env name");
            let value = !e["value"].is_badvalue();
            let from = !e["valueFrom"].is_badvalue();
            assert!(
                value != from,
                "{file}: env {:?} has value or valueFrom",
                e["name"]
            );
            if from {
                s(&e["valueFrom"]["fieldRef"]["fieldPath"], "fieldPath");
            }
        }
        for m in c["volumeMounts"].as_vec().cloned().unwrap_or_default() {
            let v = s(&m["name"], "mount name");
            assert!(
                volumes.contains_key(v),
                "{file}: {name} mounts undeclared volume {v}"
            );
            assert!(s(&m["mountPath"], "mountPath").starts_with('/'));
        }
    }
}

fn k8s_files() -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(root().join("deploy/kubernetes"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml") || n.ends_with(".yml"))
        .map(|n| format!("deploy/kubernetes/{n}"))
        .collect();
    files.sort();
    files
}

#[test]
fn kubernetes_objects_have_the_fields_their_schemas_require() {
    let files = k8s_files();
    assert!(files.len() >= 3, "{files:?}");
    let mut claims = Vec::new();
    let mut pvcs = Vec::new();
    for f in &files {
        for o in yaml(f) {
            check_object(f, &o);
            if s(&o["kind"], "kind") == "PersistentVolumeClaim" {
                pvcs.push(s(&o["metadata"]["name"], "name").to_string());
            }
            for v in o["spec"]["template"]["spec"]["volumes"]
                .as_vec()
                .cloned()
                .unwrap_or_default()
            {
                if let Some(c) = v["persistentVolumeClaim"]["claimName"].as_str() {
                    claims.push(c.to_string());
                }
            }
        }
    }
    for c in &claims {
        assert!(
            pvcs.contains(c),
            "claim {c} has no PersistentVolumeClaim here"
        );
    }
    // The image the recipes run is the one the Dockerfile builds, at this version.
    let tag = format!("trainwreck:{}", env!("CARGO_PKG_VERSION"));
    let docker = std::fs::read_to_string(root().join("deploy/kubernetes/Dockerfile")).unwrap();
    assert!(
        docker.contains(&format!("-t {tag} .")),
        "the Dockerfile builds {tag}"
    );
    let job = std::fs::read_to_string(root().join("deploy/kubernetes/job.yaml")).unwrap();
    assert!(
        job.contains(&format!("image: {tag}")),
        "job.yaml runs {tag}"
    );
}

#[test]
fn dockerfile_stages_copy_what_the_earlier_stage_installs() {
    let text = std::fs::read_to_string(root().join("deploy/kubernetes/Dockerfile")).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
        .collect();
    let stages: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("FROM "))
        .filter_map(|l| l.split(" AS ").nth(1))
        .collect();
    for l in &lines {
        if let Some(rest) = l.strip_prefix("COPY --from=") {
            let stage = rest.split_whitespace().next().unwrap();
            assert!(stages.contains(&stage), "COPY from unknown stage {stage}");
        } else if let Some(rest) = l.strip_prefix("COPY ") {
            let src = rest.split_whitespace().next().unwrap();
            // Built-context paths: dist/ is what scripts/release.sh writes.
            assert_eq!(src, "dist/", "the image is built from release.sh's dist/");
        }
    }
    // The init container copies the binary from where the image puts it.
    assert!(text.contains("/usr/local/bin/trainwreck /usr/local/bin/trainwreck"));
    let job = &yaml("deploy/kubernetes/job.yaml")[0];
    let init = &job["spec"]["template"]["spec"]["initContainers"][0];
    assert_eq!(
        s(&init["command"][1], "cp source"),
        "/usr/local/bin/trainwreck"
    );
    let release = std::fs::read_to_string(root().join("scripts/release.sh")).unwrap();
    assert!(release.contains("dist"), "release.sh writes dist/");
}

/// The Dockerfile's instructions, comments and blank lines dropped and `\` continuations
/// joined: (instruction, rest of the line).
fn dockerfile() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(root().join("deploy/kubernetes/Dockerfile")).unwrap();
    let mut out: Vec<(String, String)> = Vec::new();
    let mut pending = String::new();
    for l in text.lines() {
        let t = l.trim();
        if t.starts_with('#') || t.is_empty() {
            continue;
        }
        if let Some(head) = t.strip_suffix('\\') {
            pending.push_str(head);
            pending.push(' ');
            continue;
        }
        pending.push_str(t);
        let (ins, rest) = pending.split_once(' ').unwrap_or((pending.as_str(), ""));
        out.push((ins.to_ascii_uppercase(), rest.trim().to_string()));
        pending.clear();
    }
    assert!(
        pending.is_empty(),
        "the Dockerfile ends inside a continuation"
    );
    out
}

// The image build itself is not run here or in .ci/run (no container daemon on the CI
// machine); this checks what a build depends on: the base images, what is copied where, and
// the entrypoint.
#[test]
fn dockerfile_runs_the_wheel_binary_on_a_glibc_base_as_its_entrypoint() {
    let ins = dockerfile();
    let froms: Vec<&str> = ins
        .iter()
        .filter(|(i, _)| i == "FROM")
        .map(|(_, r)| r.as_str())
        .collect();
    assert_eq!(
        froms.len(),
        2,
        "a wheel stage and the final image: {froms:?}"
    );
    for f in &froms {
        let image = f.split_whitespace().next().unwrap();
        let tag = image.split_once(':').map(|(_, t)| t).unwrap_or("");
        assert!(
            !tag.is_empty() && tag != "latest",
            "base image {image} has a pinned tag, so a rebuild gets the same base"
        );
    }
    // The binary is dynamically linked against glibc (2.17, manylinux2014): the final base
    // must be a glibc distribution, not musl (alpine) or an image without libc.
    let last = froms[1].split_whitespace().next().unwrap();
    let base = last.split(':').next().unwrap();
    assert!(
        ["debian", "ubuntu", "rockylinux", "almalinux"].contains(&base),
        "final base {last} is a glibc distribution"
    );
    assert!(!last.contains("alpine") && !last.contains("musl"), "{last}");
    // The wheel stage installs the wheel from dist/ only (never from an index), as pip does
    // for a user, and the install must give a working command.
    let wheel_stage = froms[0];
    assert!(wheel_stage.starts_with("python:"), "{wheel_stage}");
    let install = ins
        .iter()
        .find(|(i, r)| i == "RUN" && r.contains("pip install"))
        .map(|(_, r)| r.as_str())
        .expect("the wheel stage pip-installs the wheel");
    for needed in [
        "--no-index",
        "--find-links /tmp/dist",
        "trainwreck --version",
    ] {
        assert!(install.contains(needed), "{needed} in: {install}");
    }
    // python:*-slim's pip puts scripts in /usr/local/bin; that is what the final stage takes,
    // and it is on the default PATH of a Debian image.
    let copy = ins
        .iter()
        .find(|(i, r)| i == "COPY" && r.starts_with("--from="))
        .map(|(_, r)| r.as_str())
        .expect("the final stage copies the binary from the wheel stage");
    let words: Vec<&str> = copy.split_whitespace().collect();
    assert_eq!(
        words[1..],
        ["/usr/local/bin/trainwreck", "/usr/local/bin/trainwreck"],
        "{copy}"
    );
    let after_copy: Vec<&(String, String)> = ins
        .iter()
        .skip_while(|(i, r)| !(i == "COPY" && r.starts_with("--from=")))
        .collect();
    assert!(
        after_copy
            .iter()
            .any(|(i, r)| i == "RUN" && r == "trainwreck --version"),
        "the final image runs the copied binary once at build time (a missing library fails the build)"
    );
    let entry: Vec<&str> = ins
        .iter()
        .filter(|(i, _)| i == "ENTRYPOINT")
        .map(|(_, r)| r.as_str())
        .collect();
    assert_eq!(entry.len(), 1, "{entry:?}");
    let argv: Vec<String> = serde_json::from_str(entry[0]).expect("exec-form ENTRYPOINT");
    assert_eq!(
        argv,
        ["trainwreck"],
        "the image's arguments go to trainwreck"
    );
    // The triage Job runs this image, at this version, with the binary on its PATH.
    let triage = std::fs::read_to_string(root().join("deploy/kubernetes/triage-job.yaml")).unwrap();
    assert!(triage.contains(&format!("image: trainwreck:{}", env!("CARGO_PKG_VERSION"))));
}

/// Run a container of a Job as the kubelet would: `command` + `args`, its `env` (with a
/// `fieldRef` to metadata.name given `pod`), values overridden by `set`.
fn run_container(c: &Yaml, pod: &str, set: &[(&str, String)], args: Option<&[&str]>) -> Output {
    let mut argv: Vec<String> = c["command"]
        .as_vec()
        .unwrap()
        .iter()
        .map(|a| s(a, "command").to_string())
        .collect();
    match args {
        Some(a) => argv.extend(a.iter().map(|x| x.to_string())),
        None => argv.extend(
            c["args"]
                .as_vec()
                .cloned()
                .unwrap_or_default()
                .iter()
                .map(|a| s(a, "args").to_string()),
        ),
    }
    for a in &argv {
        // The kubelet expands $(VAR) in command and args; the scripts must not rely on it
        // by accident.
        assert!(!a.contains("$("), "a $(…) the kubelet would expand: {a}");
    }
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]).env_clear().env("PATH", path_with(&[]));
    for e in c["env"].as_vec().cloned().unwrap_or_default() {
        let name = s(&e["name"], "env name");
        let value = match e["value"].as_str() {
            Some(v) => v.to_string(),
            None => {
                assert_eq!(
                    s(&e["valueFrom"]["fieldRef"]["fieldPath"], "f"),
                    "metadata.name"
                );
                pod.to_string()
            }
        };
        cmd.env(name, value);
    }
    for (k, v) in set {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

#[test]
fn kubernetes_training_container_runs_under_trainwreck_and_reports_a_failure() {
    let job = &yaml("deploy/kubernetes/job.yaml")[0];
    let pod = &job["spec"]["template"]["spec"];
    let train = &pod["containers"][0];
    let reports = tempfile::tempdir().unwrap();
    let set = [
        ("TRAINWRECK", bin().to_string()),
        ("TRAINWRECK_REPORTS", reports.path().display().to_string()),
        (
            "TRAINWRECK_DB",
            reports.path().join("history.db").display().to_string(),
        ),
    ];
    // Those are the variables the container sets, at their in-pod paths.
    for (k, _) in &set {
        assert!(
            train["env"]
                .as_vec()
                .unwrap()
                .iter()
                .any(|e| e["name"].as_str() == Some(*k)),
            "the container sets {k}"
        );
    }
    let seed_log = root().join(SEED).join("train.log");
    let failing = format!("cat '{}'; exit 7", seed_log.display());
    let o = run_container(train, "train-x7k2p", &set, Some(&["sh", "-c", &failing]));
    assert_eq!(o.status.code(), Some(7), "the Job fails as its command did");
    let run = reports.path().join("train-x7k2p");
    let md = std::fs::read_to_string(run.join("report.md"))
        .unwrap_or_else(|e| panic!("{e}: {}", text(&o.stderr)));
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("report.json")).unwrap()).unwrap();
    // The run's own capture holds this machine's /dev/shm, which may be large enough to rule
    // the seed's SIGBUS out of shm_exhausted: the report is what analyzing that run folder
    // says, and it is a failure either way.
    assert_ne!(json["verdict"], "no_failure", "{md}");
    let folder = run.display().to_string();
    let expected = json_of(&direct(&["analyze", &folder, "--format", "json"]));
    assert_eq!(json["verdict"], expected["verdict"], "{md}");
    assert_eq!(json["findings"][0]["code"], expected["findings"][0]["code"]);
    assert!(
        text(&o.stdout).contains("trainwreck: report in"),
        "{}",
        text(&o.stdout)
    );
    // The triage Job reads the volume and writes its summary there.
    let triage_doc = &yaml("deploy/kubernetes/triage-job.yaml")[0];
    let triage = &triage_doc["spec"]["template"]["spec"]["containers"][0];
    let t = run_container(
        triage,
        "trainwreck-triage-abcde",
        &[("TRAINWRECK_REPORTS", reports.path().display().to_string())],
        None,
    );
    assert_eq!(t.status.code(), Some(0), "{}", text(&t.stderr));
    let tj: Value =
        serde_json::from_str(&std::fs::read_to_string(reports.path().join("triage.json")).unwrap())
            .unwrap();
    assert_eq!(tj["runs_total"], 1);
    assert!(reports.path().join("triage.md").is_file());
    // A command that succeeds leaves no report and exits 0.
    let o = run_container(train, "train-ok", &set, Some(&["sh", "-c", "echo done"]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(!reports.path().join("train-ok/report.md").exists());
}

// ---------------------------------------------------------------- CONTRIBUTING.md recipes

/// Every file CONTRIBUTING.md names exists, and every `Type::function` it names is a function
/// of the crate. A placeholder (`rules/<category>.toml`) is checked through real instances by
/// the tests below.
#[test]
fn contributing_names_only_files_and_functions_that_exist() {
    let text = std::fs::read_to_string(root().join("CONTRIBUTING.md")).unwrap();
    let spans: Vec<&str> = text.split('`').skip(1).step_by(2).collect();
    let src: String = walkdir::WalkDir::new(root().join("src"))
        .into_iter()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "rs"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    let (mut files, mut fns) = (0, 0);
    for span in spans {
        let word = span.split_whitespace().next().unwrap_or("");
        let is_path = word.contains('/')
            && !word.contains(['<', '{', '*', ':'])
            && word
                .rsplit_once('.')
                .is_some_and(|(_, x)| ["rs", "md", "toml", "py", "sh"].contains(&x));
        if is_path {
            files += 1;
            assert!(
                root().join(word).is_file(),
                "CONTRIBUTING.md names {word}, which does not exist"
            );
        }
        if let Some((ty, f)) = span.split_once("::")
            && ty.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && f.chars().all(|c| c.is_ascii_lowercase() || c == '_')
            && !f.is_empty()
        {
            fns += 1;
            assert!(
                src.contains(&format!("fn {f}(")),
                "CONTRIBUTING.md names {span}: no such function"
            );
        }
    }
    assert!(
        files >= 15 && fns >= 5,
        "{files} paths, {fns} functions read"
    );
}

/// A rule of one's own as the recipe writes it, in a throwaway file.
const THROWAWAY_RULE: &str = r#"
[[rule]]
code = "RECIPE001"
name = "recipe-flux-capacitor-overheated"
category = "other"
role = "root"
title = "The flux capacitor overheated"

[rule.doc]
what = "`flux capacitor <unit> overheated`"
why = "The capacitor ran past its rated temperature."

[[rule.signature]]
regex = 'flux capacitor (?P<unit>\w+) overheated'
weight = 0.9

[[rule.fix]]
text = "Cool the {unit} unit before the next run."

[rule.examples]
fire = ["ERROR flux capacitor alpha overheated at step 40"]
silent = ["INFO flux capacitor alpha nominal"]
"#;

/// The rule recipe: one file in a directory given to `--rules` is checked by `rules test` and
/// fires in `analyze`, fix template filled; without `--rules` nothing of it shows.
#[test]
fn recipe_add_a_rule_is_one_file_that_rules_test_checks_and_analyze_fires() {
    let d = tempfile::tempdir().unwrap();
    let rules = d.path().join("rules");
    std::fs::create_dir(&rules).unwrap();
    std::fs::write(rules.join("flux.toml"), THROWAWAY_RULE).unwrap();
    let dir = rules.to_str().unwrap();
    let t = direct(&["rules", "test", "--rules", dir]);
    assert!(t.status.success(), "{}{}", text(&t.stdout), text(&t.stderr));

    let log = d.path().join("train.log");
    std::fs::write(
        &log,
        "step 39 loss 1.2\nERROR flux capacitor beta overheated at step 40\nTraceback (most recent call last):\nRuntimeError: stopped\n",
    )
    .unwrap();
    let log = log.to_str().unwrap();
    let with = json_of(&direct(&[
        "analyze", log, "--rules", dir, "--format", "json",
    ]));
    let top = &with["findings"][0];
    assert_eq!(top["rule"], "recipe-flux-capacitor-overheated", "{with:#}");
    assert_eq!(top["code"], "RECIPE001");
    assert!(
        s_json(&top["fix"]).contains("Cool the beta unit"),
        "{}",
        top["fix"]
    );
    let without = json_of(&direct(&["analyze", log, "--format", "json"]));
    assert!(
        !without.to_string().contains("recipe-flux-capacitor"),
        "{without:#}"
    );

    // The check is real: an example that does not behave fails `rules test`.
    let broken = THROWAWAY_RULE.replace("alpha nominal", "alpha overheated");
    std::fs::write(rules.join("flux.toml"), broken).unwrap();
    let t = direct(&["rules", "test", "--rules", dir]);
    assert_eq!(t.status.code(), Some(1), "{}", text(&t.stdout));
}

fn s_json(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("not a string: {v}"))
}

/// The rule recipe for a new built-in rule file: the file alone. Every `rules/*.toml` is
/// embedded, in name order, and no source file (nor `build.rs`) spells a rule file's name, so
/// there is no list to keep in step.
#[test]
fn recipe_a_new_built_in_rule_file_is_that_file_alone() {
    let mut on_disk: Vec<String> = std::fs::read_dir(root().join("rules"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".toml"))
        .collect();
    on_disk.sort();
    let embedded: Vec<&str> = trainwreck::rules::BUILTIN.iter().map(|(n, _)| *n).collect();
    assert_eq!(embedded, on_disk);
    for (name, text) in trainwreck::rules::BUILTIN {
        let disk = std::fs::read_to_string(root().join("rules").join(name)).unwrap();
        assert_eq!(*text, disk, "rules/{name} is embedded as written");
    }
    let code = walkdir::WalkDir::new(root().join("src"))
        .into_iter()
        .flatten()
        .map(|e| e.into_path())
        .chain([root().join("build.rs")])
        .filter(|p| p.extension().is_some_and(|x| x == "rs"));
    for path in code {
        let text = std::fs::read_to_string(&path).unwrap();
        for name in &on_disk {
            assert!(
                !text.contains(&format!("\"{name}\"")),
                "{} lists rules/{name}: build.rs lists the rule files",
                path.display()
            );
        }
    }
}

/// The category recipe's files, for every category: its rule file named after it on disk and
/// embedded, at least one live rule of it, an action (docs/categories.md's, `tests/docs.rs`)
/// and a meaning of its own.
#[test]
fn recipe_add_a_category_every_category_has_its_rule_file_rule_and_meaning() {
    use trainwreck::model::{Category, RuleStatus};
    let kb = trainwreck::rules::KnowledgeBase::load(&[]).unwrap();
    let mut meanings = std::collections::BTreeSet::new();
    for &c in Category::ALL {
        let file = format!("{c}.toml");
        assert!(
            root().join("rules").join(&file).is_file(),
            "no rules/{file}"
        );
        assert!(
            trainwreck::rules::BUILTIN.iter().any(|(n, _)| *n == file),
            "rules/{file} is not in BUILTIN"
        );
        assert!(
            kb.rules
                .iter()
                .any(|r| r.category == c && r.status != RuleStatus::Retired),
            "no rule of {c}"
        );
        assert!(!c.meaning().is_empty(), "{c} has no meaning");
        assert!(meanings.insert(c.meaning()), "{c}'s meaning is another's");
    }
}

/// The input-kind recipe: every kind has a spelling that reads back, a detection (its row in
/// the table, or one of the kinds decided by content around it), and a way to be read (its
/// lines are a log the rules scan, a fact parser, or its row's other way of reading).
#[test]
fn recipe_add_an_input_kind_every_kind_has_a_detection_and_a_reader() {
    use trainwreck::sources::SourceKind as K;
    let table: Vec<K> = trainwreck::sources::detect::table_kinds().collect();
    // Decided around the table (`detect::detect`): ELF magic, a pickle header, binary bytes,
    // and plain text when no row agrees.
    let by_content = [K::ElfCore, K::FlightRecorder, K::Binary, K::Text];
    for &k in K::ALL {
        assert_eq!(
            K::parse(k.as_str()),
            Some(k),
            "{k}: its spelling does not read back"
        );
        assert!(
            table.contains(&k) != by_content.contains(&k),
            "{k}: not exactly one of a table row or a kind decided by content"
        );
        let parser = trainwreck::sources::fact_parser(k, "memory.max").is_some();
        assert!(
            !parser || k.is_scanned(),
            "{k}: a fact parser that is never fed (its row does not read lines)"
        );
        assert!(
            k.is_log() || parser || !k.is_scanned(),
            "{k}: read line by line, yet neither a log nor a fact parser"
        );
    }
    let mut rows = table.clone();
    rows.sort_by_key(|k| k.as_str());
    rows.dedup();
    assert_eq!(rows.len(), table.len(), "a kind with two rows in the table");
}

/// The input-kind recipe is one row: what a kind is (spelling, log or not, how it is read and
/// detected, its parser) is decided in `src/sources/kinds.rs` alone. Outside it (and outside
/// test modules and comments), code names a kind only to ask for that kind on purpose; this is
/// the whole list of those places, so a new kind, or a new `match` deciding per kind, shows here.
#[test]
fn recipe_add_an_input_kind_is_one_row_and_its_parser() {
    let named = regex::Regex::new(r"SourceKind::([A-Z]\w*)").unwrap();
    let mut found = BTreeMap::<String, Vec<String>>::new();
    for e in walkdir::WalkDir::new(root().join("src"))
        .into_iter()
        .flatten()
    {
        let path = e.path();
        let rel = path.strip_prefix(root()).unwrap().display().to_string();
        if path.extension().is_none_or(|x| x != "rs")
            || rel == "src/sources/kinds.rs"
            || path.file_name().is_some_and(|n| n == "tests.rs")
        {
            continue;
        }
        let text = std::fs::read_to_string(path).unwrap();
        let code = text.split("#[cfg(test)]\nmod ").next().unwrap_or_default();
        for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
            for c in named.captures_iter(line) {
                let kind = c[1].to_string();
                let files = found.entry(kind).or_default();
                if !files.contains(&rel) {
                    files.push(rel.clone());
                }
            }
        }
    }
    found.remove("ALL");
    for files in found.values_mut() {
        files.sort();
    }
    let expected: BTreeMap<String, Vec<String>> = [
        // Detection's own decisions around the table, and the skipped-binary entries of `open`.
        (
            "Binary",
            &["src/sources/detect.rs", "src/sources/open.rs"][..],
        ),
        ("ElfCore", &["src/sources/detect.rs"]),
        ("FlightRecorder", &["src/sources/detect.rs"]),
        ("OwnReport", &["src/sources/detect.rs"]),
        // The kernel log and a core's text carry the end's time and the crash report.
        ("CoreText", &["src/analyze/after.rs"]),
        ("Dmesg", &["src/analyze/after.rs"]),
        // A capture's manifest says what was captured.
        ("CaptureManifest", &["src/analyze/read.rs"]),
        // What a paste or an unreadable input is read as.
        (
            "Text",
            &[
                "src/analyze/mod.rs",
                "src/analyze/read.rs",
                "src/diff/mod.rs",
                "src/sources/detect.rs",
            ],
        ),
    ]
    .into_iter()
    .map(|(k, f)| (k.to_string(), f.iter().map(|s| s.to_string()).collect()))
    .collect();
    assert_eq!(
        found, expected,
        "a kind is named outside its row in src/sources/kinds.rs: decide it in the row \
         (its `log`, `read` or `detect`), or add the place here if it asks for that kind on purpose"
    );
}

/// The output-format recipe: each row of `FORMATS` has its printer file, is listed by the
/// `--help` of each command it names, and prints the seed's report when it offers `analyze`.
#[test]
fn recipe_add_an_output_format_each_row_has_its_printer_and_prints() {
    use trainwreck::report::format::{Command as C, FORMATS};
    let help = |args: &[&str]| text(&direct(args).stdout);
    let helps = [
        (C::Analyze, help(&["analyze", "--help"])),
        (C::Facts, help(&["facts", "--help"])),
        (C::Triage, help(&["triage", "--help"])),
        (C::Diff, help(&["diff", "--help"])),
    ];
    for f in FORMATS {
        let file = std::iter::once(f.name)
            .chain(f.aliases.iter().copied())
            .map(|n| root().join(format!("src/report/{n}.rs")))
            .find(|p| p.is_file());
        assert!(file.is_some(), "{}: no src/report/{}.rs", f.name, f.name);
        for (c, h) in &helps {
            assert_eq!(
                h.contains(&format!("- {}:", f.name)),
                f.offers(*c),
                "{}: {c:?}'s --help disagrees with its row",
                f.name
            );
        }
        if f.offers(C::Analyze) {
            let o = direct(&["analyze", SEED, "--format", f.name]);
            assert!(o.status.success(), "{}: {}", f.name, text(&o.stderr));
            assert!(
                text(&o.stdout).contains("shm_exhausted"),
                "{}: the seed's cause is not in its output",
                f.name
            );
        }
    }
}
