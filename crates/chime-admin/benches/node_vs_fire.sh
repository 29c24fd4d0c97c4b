#!/usr/bin/env bash
# A workflow node's cost against a job fire's, the comparison of docs/BENCHMARKS.md
# ("Workflows"), in one command.
#
#   crates/chime-admin/benches/node_vs_fire.sh [SETS]
#
# Builds the load tools, then runs SETS sets (default 6) of three loads in turn, on SQLite:
#   * workflow_load --instances 1000 --rounds 6: 1,000 instances of ten nodes due on one
#     second, fired six times; the figure is the admin's CPU above its idle rate per node run,
#     the mean of the five warm fires (one fire's varies by a tenth or more from the next);
#   * admin_load --jobs 2000 --secs 10: 2,000 jobs due on the same second, every second (the
#     size of the graph's waves: 1,000 to 4,000 nodes start together);
#   * admin_load --jobs 10000 --secs 10: 10,000 jobs due on the same second.
# This host's speed drifts by a fifth or more from one hour to the next, so the loads run in
# turn, and only figures of one series compare. Prints each set, then each load's mean with
# its standard error, and the ratios node ÷ fire with the standard error of the per-set
# ratios, with `uptime` before and after. Takes about two minutes a set.
#
# Environment:
#   CHIME_BENCH_STEADY=1       steady loads at one rate instead: workflow_load --every 2
#                              --steady 20 (1,000 instances fired every 2 s, 5,000 node runs a
#                              second, instances overlapping) against admin_load --jobs 5000
#                              --secs 20 (5,000 fires a second), each per run sent in its window
#   CHIME_BENCH_WORKFLOW_LOAD  another workflow_load binary to measure in each set as well
#                              (e.g. one built from an older tree, with its admin_load beside
#                              it): its node figure is printed beside this tree's, as "other"
set -euo pipefail
cd "$(dirname "$0")/../../.."
sets=${1:-6}
target=${CARGO_TARGET_DIR:-target}
cargo build --quiet --release -p chime-admin --examples
tools=$target/release/examples
other=${CHIME_BENCH_WORKFLOW_LOAD:-}
results=$(mktemp)
trap 'rm -f "$results"' EXIT

steady=${CHIME_BENCH_STEADY:-}
# The mean over the warm fires, as workflow_load prints it (or the steady window's figure).
node_figure() {
    if [ -n "$steady" ]; then
        "$1" --instances 1000 --every 2 --steady 20 | sed -n 's/.*above idle \([0-9.]*\) us per node run sent.*/\1/p'
    else
        "$1" --instances 1000 --rounds 6 | sed -n 's/^mean over .* above idle \([0-9.]*\) us per node run.*/\1/p'
    fi
}
fire_figure() {
    RUST_LOG=error "$tools/admin_load" --jobs "$1" --secs "${2:-10}" | sed -n 's/.*above_idle_us=\([0-9.]*\).*/\1/p'
}

echo "before: $(uptime)"
for set in $(seq 1 "$sets"); do
    node=$(node_figure "$tools/workflow_load")
    line="node=$node"
    if [ -n "$other" ]; then line="$line other=$(node_figure "$other")"; fi
    if [ -n "$steady" ]; then
        line="$line fire5000=$(fire_figure 5000 20)"
    else
        line="$line fire2000=$(fire_figure 2000) fire10000=$(fire_figure 10000)"
    fi
    case " $line" in
        *"= "* | *=) echo "a load printed no figure in set $set: $line" >&2; exit 1 ;;
    esac
    echo "set $set at $(date -u +%H:%M) UTC, µs above idle per run: $line"
    echo "$line" >>"$results"
done
echo "after: $(uptime)"

python3 - "$results" <<'EOF'
import statistics, sys

rows = [dict(kv.split("=") for kv in line.split()) for line in open(sys.argv[1])]
rows = [{k: float(v) for k, v in r.items()} for r in rows]
def se(xs):
    return statistics.stdev(xs) / len(xs) ** 0.5 if len(xs) > 1 else float("nan")
for key in rows[0]:
    xs = [r[key] for r in rows]
    print(f"{key:>10}: mean {statistics.mean(xs):.1f} µs, standard error {se(xs):.1f}")
for fire in (k for k in rows[0] if k.startswith("fire")):
    for node in ("node", "other"):
        if node in rows[0]:
            ratios = [r[node] / r[fire] for r in rows]
            print(f"{node} ÷ {fire}: {statistics.mean(ratios):.3f}, standard error {se(ratios):.3f}")
EOF
