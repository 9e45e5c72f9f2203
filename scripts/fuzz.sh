#!/usr/bin/env bash
# The parsers' fuzz properties (crates/matmul/tests/fuzz.rs, crates/matmul-bench/tests/fuzz.rs)
# with a long budget: CASES per property (default 200000; `cargo test` runs 3000).
# Usage (repo root): scripts/fuzz.sh [CASES]
set -euo pipefail
cd "$(dirname "$0")/.."
export PROPTEST_CASES=${1:-200000}
cargo test --release -p matmul --test fuzz
cargo test --release -p matmul-bench --test fuzz
