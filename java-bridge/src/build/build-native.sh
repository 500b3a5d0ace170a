#!/usr/bin/env bash
# Builds the Rust cdylib (libfragstate.so, crate fragstate-jni) that the plugin jar carries and
# copies it to $2/native/linux-x86_64/ (a resource directory of the jar). It also builds the
# `fragstate` command (crate fragstate-cli): the integration harness and the demo start standalone
# nodes with target/<profile>/fragstate. Two cargo runs, not one: cargo unifies the features of
# the packages of one run, and the CLI's `bench` feature (benchmark frames) must not reach the
# library that runs inside Flink (SECURITY.md).
# Called by java-bridge/pom.xml in generate-resources with the repository root as working dir.
# $1 = "true" skips cargo (the .so already built in the cargo target directory is used).
# $3 = cargo profile (default release; CI passes "ci", which `cargo test --profile ci` built).
set -euo pipefail
skip="${1:-false}"
dest="${2:?destination directory}"
profile="${3:-release}"
target_dir="${CARGO_TARGET_DIR:-target}"
lib="$target_dir/$profile/libfragstate.so"
if [ "$skip" != "true" ]; then
  if ! command -v cargo >/dev/null 2>&1; then
    echo "fragstate-flink: 'cargo' is not on PATH. The plugin jar bundles the Rust core, so building" >&2
    echo "  it needs a Rust toolchain (https://rustup.rs, rust-version in Cargo.toml)." >&2
    echo "  Or build $lib yourself and pass -Dfragstate.skipCargo=true." >&2
    exit 1
  fi
  echo "fragstate-flink: cargo build --profile $profile -p fragstate-jni --locked; then -p fragstate-cli"
  cargo build --profile "$profile" -p fragstate-jni --locked
  cargo build --profile "$profile" -p fragstate-cli --locked
fi
if [ ! -f "$lib" ]; then
  echo "fragstate-flink: $lib is missing (cargo build --profile $profile -p fragstate-jni produces it)" >&2
  exit 1
fi
mkdir -p "$dest/native/linux-x86_64"
cp "$lib" "$dest/native/linux-x86_64/libfragstate.so"
