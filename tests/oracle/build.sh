#!/usr/bin/env bash
# Build handoff-oracle offline in release mode and print the binary's path.
#   tests/oracle/build.sh            build (stdout: the binary path only)
#   tests/oracle/build.sh --check    also run the unit tests (incl. the reference's
#                                    own #[cfg(test)] tests) and the example checks
# Set HANDOFF_SEED=/path/to/replay_handoff.rs to verify the vendored copy against a seed.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

seed="${HANDOFF_SEED:-}"
if [[ -n "$seed" ]]; then
    if [[ ! -f "$seed" ]]; then
        echo "build.sh: HANDOFF_SEED=$seed is not a file" >&2
        exit 1
    fi
    if ! cmp -s "$seed" reference/replay_handoff.rs; then
        echo "build.sh: reference/replay_handoff.rs differs from $seed (it must be a byte-identical copy)" >&2
        exit 1
    fi
fi

cargo build --offline --release --quiet >&2
bin="$here/target/release/handoff-oracle"

if [[ "${1:-}" == "--check" ]]; then
    cargo test --offline --workspace --quiet >&2
    python3 "$here/check_examples.py" "$bin" >&2
fi
echo "$bin"
