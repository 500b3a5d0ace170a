//! `fragstate tune` without a Flink cluster: `--predict` (both recovery
//! predictors against measured failures, the evaluation's comparison of
//! issue 15), and options refused before anything connects.

use std::process::Command;

const EXE: &str = env!("CARGO_BIN_EXE_fragstate");

fn lines(out: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(out).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// A temporary folder with e.json: experiments exactly on recovery = 2 + 0.5 i + 0.001 t,
/// latency = 300 + 1000 / i + 0.01 t.
fn with_experiments() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut exps = Vec::new();
    for (i, t) in [(10.0, 1000.0), (30.0, 2000.0), (60.0, 1500.0), (120.0, 500.0), (10.0, 3000.0), (60.0, 4000.0), (120.0, 2500.0)] {
        exps.push(serde_json::json!({"interval_s": i, "throughput": t, "latency_ms": 300.0 + 1000.0 / i + 0.01 * t,
            "recovery_s": 2.0 + 0.5 * i + 0.001 * t}));
    }
    std::fs::write(dir.path().join("e.json"), serde_json::to_string(&exps).unwrap()).unwrap();
    dir
}

/// `fragstate tune --experiments e.json ARGS` in `dir`: whether it succeeded, and its stderr.
fn tune_in(dir: &std::path::Path, args: &[&str]) -> (bool, String) {
    let out = Command::new(EXE).args(["tune", "--experiments", "e.json"]).args(args).current_dir(dir).output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn predict_prints_both_predictors_and_their_errors_against_the_measured_failures() {
    let dir = with_experiments();
    std::fs::write(
        dir.path().join("f.json"),
        r#"{"detection_s": 1, "restart_s": 2, "state_bytes": 1000000, "restore_bytes_per_s": 1000000, "max_throughput": 3000}"#,
    )
    .unwrap();
    std::fs::write(dir.path().join("m.json"), r#"[{"interval_s": 20, "throughput": 1000, "recovery_s": 13}]"#).unwrap();
    let out = Command::new(EXE)
        .args(["tune", "--experiments", "e.json", "--figures", "f.json", "--predict", "m.json"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let l = lines(&out.stdout);
    assert_eq!(l.len(), 3, "{l:?}");
    assert_eq!(l[0]["event"], "prediction");
    // the regression: 2 + 0.5 * 20 + 0.001 * 1000 = 13
    assert!((l[0]["regression_s"].as_f64().unwrap() - 13.0).abs() < 1e-6, "{l:?}");
    // fragstate: down = 1 + 2 + 1 = 4 s; lost = 10 s; 4 + 1000 * (10 + 4) / (3000 - 1000) = 11
    assert!((l[0]["fragstate_s"].as_f64().unwrap() - 11.0).abs() < 1e-9, "{l:?}");
    assert_eq!(l[1]["predictor"], "regression");
    assert!(l[1]["rms_s"].as_f64().unwrap() < 1e-6);
    assert_eq!(l[2]["predictor"], "fragstate");
    assert!((l[2]["rms_s"].as_f64().unwrap() - 2.0).abs() < 1e-9);
}

#[test]
fn predict_names_a_missing_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("e.json"), "[]").unwrap();
    let (ok, err) = tune_in(dir.path(), &["--predict", "nothing.json"]);
    assert!(!ok && err.contains("nothing.json"), "{err}");
}

#[test]
fn a_checkpoint_budget_is_refused_without_an_mtbf_out_of_range_or_with_a_bad_profile() {
    let dir = with_experiments();
    // nothing listens on port 9: every refusal below comes before the first request
    let flink = ["--flink", "http://127.0.0.1:9", "--job", "0"];
    let (ok, err) = tune_in(dir.path(), &[&flink[..], &["--checkpoint-budget", "0.005"]].concat());
    assert!(!ok && err.contains("--mtbf"), "{err}");
    let (ok, err) = tune_in(dir.path(), &[&flink[..], &["--mtbf", "600", "--checkpoint-budget", "1.5"]].concat());
    assert!(!ok && err.contains("checkpoint budget") && err.contains("(0, 1]") && err.contains("1.5"), "{err}");
    std::fs::write(dir.path().join("p.json"), "[1000, -5]").unwrap();
    let (ok, err) = tune_in(dir.path(), &[&flink[..], &["--mtbf", "600", "--checkpoint-budget", "0.005", "--load-profile", "p.json"]].concat());
    assert!(!ok && err.contains("load profile") && err.contains("-5"), "{err}");
    std::fs::write(dir.path().join("p.json"), "[1000, 5000]").unwrap();
    let (ok, err) = tune_in(dir.path(), &[&flink[..], &["--mtbf", "600", "--checkpoint-budget", "0.005", "--load-profile", "p.json", "--load-profile-period", "0"]].concat());
    assert!(!ok && err.contains("load profile period"), "{err}");
    let (ok, err) = tune_in(dir.path(), &[&flink[..], &["--mtbf", "600", "--checkpoint-budget", "0.005", "--load-profile-period", "2"]].concat());
    assert!(!ok && err.contains("--load-profile"), "{err}");
    // the period's default needs no profile: this one runs its second, polling a Flink that is not there
    let (_, err) = tune_in(dir.path(), &[&flink[..], &["--mtbf", "600", "--checkpoint-budget", "0.005", "--seconds", "1"]].concat());
    assert!(err.contains("http://127.0.0.1:9/jobs/0") && !err.contains("required"), "{err}");
    std::fs::write(dir.path().join("p.json"), "{}").unwrap();
    let (ok, err) = tune_in(dir.path(), &[&flink[..], &["--mtbf", "600", "--checkpoint-budget", "0.005", "--load-profile", "p.json"]].concat());
    assert!(!ok && err.contains("p.json"), "{err}");
}

/// `dir` with e.json (experiments), f.json (figures: down 4 s, 3,000 records/s worked off) and
/// in.json (600 s of input at 1,000 records/s).
fn with_simulation_inputs() -> tempfile::TempDir {
    let dir = with_experiments();
    std::fs::write(
        dir.path().join("f.json"),
        r#"{"detection_s": 1, "restart_s": 2, "state_bytes": 1000000, "restore_bytes_per_s": 1000000, "max_throughput": 3000}"#,
    )
    .unwrap();
    std::fs::write(dir.path().join("in.json"), serde_json::to_string(&vec![1000.0; 600]).unwrap()).unwrap();
    dir
}

#[test]
fn simulate_runs_the_controller_and_each_fixed_interval_on_the_same_kills() {
    let dir = with_simulation_inputs();
    let out = Command::new(EXE)
        .args(["tune", "--experiments", "e.json", "--figures", "f.json", "--mtbf", "200", "--simulate", "in.json"])
        .args(["--simulate-kills", "3", "--simulate-seeds", "4", "--simulate-fixed", "10,120"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let l = lines(&out.stdout);
    let runs: Vec<_> = l.iter().filter(|x| x["event"] == "simulated run").collect();
    assert_eq!(runs.len(), 4 * 3, "{l:?}");
    for seed in 1..=4 {
        let kills: Vec<_> = runs.iter().filter(|r| r["seed"] == seed).map(|r| r["kills_s"].clone()).collect();
        assert!(kills.iter().all(|k| *k == kills[0] && k.as_array().unwrap().len() == 3), "{kills:?}");
    }
    let policies: Vec<_> = l.iter().filter(|x| x["event"] == "simulated policy").collect();
    let names: Vec<_> = policies.iter().map(|p| p["policy"].as_str().unwrap()).collect();
    assert_eq!(names, ["controller", "fixed:10", "fixed:120"]);
    // every 10 s loses less work than every 120 s
    let lost = |p: &serde_json::Value| p["lost_s_mean"].as_f64().unwrap();
    assert!(lost(policies[1]) < 10.0 && lost(policies[2]) > lost(policies[1]), "{policies:?}");
    let share = policies[1]["controller_fewer_violations_share"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&share));
}

#[test]
fn simulate_refuses_what_it_cannot_run_and_names_it() {
    let dir = with_simulation_inputs();
    let (ok, err) = tune_in(dir.path(), &["--simulate", "in.json"]);
    assert!(!ok && err.contains("--figures"), "{err}");
    let (ok, err) = tune_in(dir.path(), &["--figures", "f.json", "--simulate", "in.json", "--simulate-kills", "9"]);
    assert!(!ok && err.contains("at most 5 kills"), "{err}");
    std::fs::write(dir.path().join("empty.json"), "[]").unwrap();
    let (ok, err) = tune_in(dir.path(), &["--figures", "f.json", "--simulate", "empty.json"]);
    assert!(!ok && err.contains("input rate"), "{err}");
    let (ok, err) = tune_in(dir.path(), &["--figures", "f.json", "--simulate", "in.json", "--simulate-kills-at", "300,100"]);
    assert!(!ok && err.contains("ascending"), "{err}");
    let (ok, err) = tune_in(dir.path(), &["--figures", "f.json", "--simulate", "in.json", "--simulate-fixed", "0"]);
    assert!(!ok && err.contains("fixed interval"), "{err}");
}
