//! The AFL++ entry point: `fragstate-fuzz <target>` runs one target of
//! [`fragstate_fuzz::TARGETS`] in AFL's persistent mode (built by
//! `cargo afl build --features afl`; ci/fuzz.sh runs it).

fn main() {
    let name = std::env::args().nth(1).unwrap_or_default();
    let Some(target) = fragstate_fuzz::target(&name) else {
        let names: Vec<&str> = fragstate_fuzz::TARGETS.iter().map(|t| t.name).collect();
        eprintln!("usage: fragstate-fuzz <target>; targets: {}", names.join(", "));
        std::process::exit(2);
    };
    afl::fuzz!(|data: &[u8]| (target.run)(data));
}
