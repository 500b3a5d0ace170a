#!/usr/bin/env bash
# Builds the Rust cdylib (libfragstate.so) that the plugin jar carries.
# Called by java-bridge/pom.xml in generate-resources with the repository root as working dir.
# $1 = "true" skips cargo (the .so already in target/release is used).
set -euo pipefail
lib=target/release/libfragstate.so
if [ "${1:-false}" != "true" ]; then
  if ! command -v cargo >/dev/null 2>&1; then
    echo "fragstate-flink: 'cargo' is not on PATH. The plugin jar bundles the Rust core, so building" >&2
    echo "  it needs a Rust toolchain (https://rustup.rs, rust-version in Cargo.toml)." >&2
    echo "  Or build $lib yourself and pass -Dfragstate.skipCargo=true." >&2
    exit 1
  fi
  echo "fragstate-flink: cargo build --release -p fragstate --locked"
  cargo build --release -p fragstate --locked
fi
if [ ! -f "$lib" ]; then
  echo "fragstate-flink: $lib is missing (cargo build --release -p fragstate produces it)" >&2
  exit 1
fi
