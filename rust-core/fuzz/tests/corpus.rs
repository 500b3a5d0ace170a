//! Replays every committed input — the fuzzer's corpus and every past
//! finding — through its target, so what was once found stays fixed and the
//! targets keep compiling and passing without AFL++. Also checks that the
//! committed seeds are what `seeds::all` makes today (a format change makes
//! them stale: rewrite them with `FRAGSTATE_WRITE_SEEDS=1 cargo test -p
//! fragstate-fuzz`).

use std::fs;
use std::path::{Path, PathBuf};

use fragstate_fuzz::{seeds, target, TARGETS};

/// The disk targets' scratch files go under the build directory, not the system's temp directory.
fn use_build_scratch() {
    std::env::set_var("FRAGSTATE_FUZZ_SCRATCH", env!("CARGO_TARGET_TMPDIR"));
}

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn inputs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries.map(|e| e.expect("read corpus entry").path()).filter(|p| p.is_file()).collect();
    files.sort();
    files
}

#[test]
fn every_committed_input_passes_its_target() {
    use_build_scratch();
    let mut replayed = 0;
    for t in TARGETS {
        let corpus = inputs(&crate_dir().join("corpus").join(t.name));
        assert!(!corpus.is_empty(), "no corpus for target {}", t.name);
        for file in corpus.iter().chain(&inputs(&crate_dir().join("regressions").join(t.name))) {
            let bytes = fs::read(file).expect("read input");
            let outcome = std::panic::catch_unwind(|| (t.run)(&bytes));
            assert!(outcome.is_ok(), "target {} failed on {}", t.name, file.display());
            replayed += 1;
        }
    }
    println!("replayed {replayed} inputs over {} targets", TARGETS.len());
}

#[test]
fn committed_seeds_are_current() {
    use_build_scratch();
    let write = std::env::var_os("FRAGSTATE_WRITE_SEEDS").is_some();
    for seed in seeds::all() {
        assert!(target(seed.target).is_some(), "seed for unknown target {}", seed.target);
        let path = crate_dir().join("corpus").join(seed.target).join(&seed.name);
        if write {
            fs::create_dir_all(path.parent().expect("corpus dir")).expect("create corpus dir");
            fs::write(&path, &seed.bytes).expect("write seed");
        }
        let committed = fs::read(&path).unwrap_or_default();
        assert!(
            committed == seed.bytes,
            "{} is missing or stale: rewrite the seeds with FRAGSTATE_WRITE_SEEDS=1 cargo test -p fragstate-fuzz",
            path.display()
        );
    }
}

#[test]
fn seeds_decode_as_valid_inputs() {
    // Each seed is valid input, so the targets' success paths run on it: a
    // seed that fails to decode would leave the fuzzer outside the format.
    use fragstate_core::format;
    use_build_scratch();
    for seed in seeds::all() {
        match seed.target {
            "manifest" => drop(format::decode_manifest(&seed.bytes).expect("seed manifest decodes")),
            "fragment_header" => drop(format::decode_fragment_header(&seed.bytes).expect("seed header decodes")),
            "hello" => drop(fragstate_net::wire::decode_hello(&seed.bytes).expect("seed hello decodes")),
            _ => {}
        }
        (target(seed.target).expect("known target").run)(&seed.bytes);
    }
}
