#!/usr/bin/env bash
# The README's demo command.
#
# Until the Flink demo (issue 5) lands, this demonstrates the core: one object
# written through an in-process mesh of 6 nodes as RS(4,2) fragments, two of
# its holders killed, and the object read back from the surviving four, with
# timings and the peers it came from.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo >/dev/null 2>&1 || { echo "ci/demo.sh: cargo not found; install Rust (https://rustup.rs)" >&2; exit 1; }

echo "==> building fragstate (release)"
cargo build --release --locked -p fragstate
bin=target/release/fragstate

echo
echo "==> 512 MiB through 6 nodes, intact read"
"$bin" bench mesh --nodes 6 --k 4 --m 2 --size 512MiB --failed 0
echo
echo "==> the same, with 2 of the object's holders killed before the read"
"$bin" bench mesh --nodes 6 --k 4 --m 2 --size 512MiB --failed 2
echo
echo "==> 3 holders killed: one more than RS(4,2) survives; the read fails and says why (never wrong bytes)"
"$bin" bench mesh --nodes 6 --k 4 --m 2 --size 16MiB --failed 3
