#!/usr/bin/env bash
# The executor benchmark of docs/BENCHMARKS.md ("Executor SDK") in one command.
#
#   crates/chime-executor/benches/executor_bench.sh [LOG_PARENT] [run_load flags…]
#
# Builds the demo executor and the load generator, starts the executor with a fresh run-log
# directory under LOG_PARENT (default /tmp, ext4 on the reference machine; /dev/shm for
# tmpfs), runs the load, prints `uptime` before and after, stops the executor, and checks that
# every trigger was reported and left exactly one complete log. Exits non-zero otherwise.
# Default load: 64 connections, 20 s after 3 s of warm-up. Soak:
#   executor_bench.sh /tmp --connections 32 --rate 5000 --duration 600 --rss-every 60
#
# Environment:
#   CHIME_BENCH_PACK=1        run the executor with --pack-run-logs (default: one file per run)
#   CHIME_BENCH_PROFILE=debug use (and build) the debug binaries instead of release: the
#                             smoke run of scripts/test, where only correctness counts
#   CHIME_BENCH_EXECUTOR      another executor binary to compare (e.g. one built from an older tree)
#   CHIME_BENCH_KEEP_LOGS=1   leave the run-log directory in place (its path is printed) instead
#                             of deleting it at exit. For series of one-file-per-run runs: for
#                             60–300 s after a mass deletion ext4 skips the freed inodes
#                             (`recently_deleted`, reading an inode table block for each), and
#                             file creation costs several times more kernel time, so deleting
#                             one run's 600,000 files slows the next run down, not the executor.
set -euo pipefail
cd "$(dirname "$0")/../../.."
parent=${1:-/tmp}
shift || true
if [ $# -eq 0 ]; then set -- --connections 64 --duration 20 --warmup 3; fi
target=${CARGO_TARGET_DIR:-target}
profile=${CHIME_BENCH_PROFILE:-release}
case $profile in
    release) cargo build --quiet --release -p chime-executor --bin chime-demo-executor --example run_load ;;
    # The same build as scripts/test's (all binaries and examples), so nothing is rebuilt there.
    debug) cargo build --quiet --locked --bins --examples ;;
    *) echo "CHIME_BENCH_PROFILE must be release or debug" >&2; exit 2 ;;
esac
executor_flags=()
if [ "${CHIME_BENCH_PACK:-0}" = 1 ]; then executor_flags+=(--pack-run-logs); fi
# Two free loopback ports (others may be running their own executors on this machine).
read -r admin_port executor_port < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))')
# A fresh directory every time: ext4 is slow to reuse inodes right after mass deletion.
logdir=$(mktemp -d "$parent/chime-bench-logs-XXXXXX")
out=$(mktemp)
RUST_LOG=error "${CHIME_BENCH_EXECUTOR:-$target/$profile/chime-demo-executor}" \
    --admin "http://127.0.0.1:$admin_port/xxl-job-admin" --listen "127.0.0.1:$executor_port" \
    --logdir "$logdir" "${executor_flags[@]}" &
pid=$!
if [ "${CHIME_BENCH_KEEP_LOGS:-0}" = 1 ]; then
    trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -f "$out"; echo "run logs kept in $logdir"' EXIT
else
    trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -rf "$logdir" "$out"' EXIT
fi
for _ in $(seq 1 100); do
    (echo >"/dev/tcp/127.0.0.1/$executor_port") 2>/dev/null && break
    sleep 0.1
done
echo "run logs: ${executor_flags[*]:-one file per run}, under $logdir"
echo "uptime before: $(uptime)"
"$target/$profile/examples/run_load" --executor "127.0.0.1:$executor_port" \
    --admin-listen "127.0.0.1:$admin_port" --executor-pid "$pid" "$@" | tee "$out"
echo "uptime after:  $(uptime)"
# Graceful stop, then check that every accepted trigger left its whole log, as a file of its
# own or as a record in a packed bucket: the set of run ids with a log must have exactly one
# entry per accepted trigger (no run twice, none missing, none unknown), and there must be one
# "execute end" marker line per accepted trigger. (The no-op handler logs only the two marker
# lines, which start with a timestamp, so every line starting '#chime-run ' is a header.)
kill -TERM $pid
wait $pid || true
export LC_ALL=C
sent=$(sed -n 's/^all triggers sent *\([0-9]*\).*/\1/p' "$out")
missing=$(sed -n 's/^all triggers sent.*(missing \([0-9]*\)).*/\1/p' "$out")
failed=$(sed -n 's/^\/run failed *\([0-9]*\).*/\1/p' "$out")
accepted=$((sent - failed))
ids=$logdir.ids
{ find "$logdir" -name '*.log' -not -path '*/packed/*' -printf '%f\n' | sed 's/\.log$//'
  find "$logdir" -path '*/packed/*.log' -exec cat {} + | sed -n 's/^#chime-run \([0-9]*\) [0-9]*$/\1/p'
} >"$ids"
own=$(find "$logdir" -name '*.log' -not -path '*/packed/*' | wc -l)
logs=$(wc -l <"$ids")
distinct=$(sort -un "$ids" | awk -v max="$sent" '$1 >= 1 && $1 <= max' | wc -l)
rm -f "$ids"
ends=$(find "$logdir" -name '*.log' -exec cat {} + | grep -c 'xxl-job job execute end' || true)
echo "run logs written: $logs ($own files of their own, $((logs - own)) packed), $distinct distinct run ids, $ends end markers, for $accepted accepted triggers"
[ "$missing" = 0 ] || { echo "RESULTS MISSING: $missing triggers were never reported" >&2; exit 1; }
[ "$accepted" -gt 0 ] && [ "$logs" = "$accepted" ] && [ "$distinct" = "$accepted" ] && [ "$ends" = "$accepted" ] ||
    { echo "RUN LOGS MISSING OR WRONG" >&2; exit 1; }
