#!/usr/bin/env bash
# Link mode against HTTP mode, end to end with the real processes (docs/BENCHMARKS.md,
# "Executor links"): a release `chime admin` on a fresh SQLite file and one `chime executor
# --demo-handlers`, in HTTP mode and then with `--link`, running JOBS jobs of `noopJobHandler`
# that fire every second. For a window of SECS seconds it reports the runs that succeeded per
# second (from the admin's database), and the CPU of the admin and of the executor per run.
#
#   crates/chime-admin/benches/link_vs_http.sh [JOBS] [SECS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../../.."
jobs=${1:-2000}
secs=${2:-20}
rounds=${3:-2}
target=${CARGO_TARGET_DIR:-target}
cargo build --release --quiet -p chime --bin chime
chime=$target/release/chime
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
token=bench-access-token-0123456789
api=bench-api-token-0123456789

cpu_s() { # user + system seconds of process $1
    awk '{print ($14 + $15) / 100}' "/proc/$1/stat"
}

port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

one() { # one MODE (http|link)
    local mode=$1 dir=$work/$1-$RANDOM
    mkdir -p "$dir"
    local ap ep
    ap=$(port)
    ep=$(port)
    CHIME_ADMIN_PASSWORD=bench-password-1 "$chime" admin --listen "127.0.0.1:$ap" --db "sqlite://$dir/chime.db" \
        --access-token "$token" --api-token "$api" --default-tz UTC >"$dir/admin.log" 2>&1 &
    local admin=$!
    local base=http://127.0.0.1:$ap
    for _ in $(seq 1 100); do curl -fs "$base/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
    curl -fs -X POST "$base/v1/groups" -H "Authorization: Bearer $api" -H 'Content-Type: application/json' \
        -d '{"app_name":"bench","title":"bench"}' >/dev/null
    local link_flag=()
    [ "$mode" = link ] && link_flag=(--link --link-id bench-1)
    "$chime" executor --admin "$base" --appname bench --access-token "$token" --demo-handlers \
        --listen "127.0.0.1:$ep" --logdir "$dir/logs" "${link_flag[@]}" >"$dir/executor.log" 2>&1 &
    local executor=$!
    for _ in $(seq 1 100); do
        curl -fs "$base/v1/executors?group=bench" -H "Authorization: Bearer $api" | grep -q '"address"' && break
        sleep 0.1
    done
    python3 - "$base" "$api" "$jobs" <<'EOF'
import json, sys, urllib.request
base, api, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for i in range(n):
    body = json.dumps({"group": "bench", "handler": "noopJobHandler", "schedule_type": "CRON",
                       "schedule_expr": "* * * * * ?", "running": True}).encode()
    req = urllib.request.Request(base + "/v1/jobs", body, {"Authorization": "Bearer " + api,
                                 "Content-Type": "application/json"})
    urllib.request.urlopen(req).read()
EOF
    sleep 5
    local a0 e0 t0 a1 e1 t1
    a0=$(cpu_s $admin)
    e0=$(cpu_s $executor)
    t0=$(date +%s%3N)
    sleep "$secs"
    a1=$(cpu_s $admin)
    e1=$(cpu_s $executor)
    t1=$(date +%s%3N)
    # Runs scheduled in the window, counted once their results are in.
    sleep 3
    python3 - "$dir/chime.db" "$t0" "$t1" "$a0" "$a1" "$e0" "$e1" "$mode" "$jobs" <<'EOF'
import sqlite3, sys
db, t0, t1 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
a0, a1, e0, e1 = map(float, sys.argv[4:8])
mode, jobs = sys.argv[8], int(sys.argv[9])
c = sqlite3.connect(db)
ok, = c.execute("SELECT COUNT(*) FROM run WHERE scheduled_at >= ? AND scheduled_at < ? AND handle_code = 200", (t0, t1)).fetchone()
all_, = c.execute("SELECT COUNT(*) FROM run WHERE scheduled_at >= ? AND scheduled_at < ?", (t0, t1)).fetchone()
w = (t1 - t0) / 1000
print(f"mode={mode} jobs={jobs} window_s={w:.1f} runs={all_} succeeded_per_s={ok / w:.0f} "
      f"admin_cpu_cores={(a1 - a0) / w:.2f} admin_us_per_run={(a1 - a0) * 1e6 / max(ok, 1):.0f} "
      f"executor_cpu_cores={(e1 - e0) / w:.2f} executor_us_per_run={(e1 - e0) * 1e6 / max(ok, 1):.0f}")
EOF
    kill "$executor" "$admin" 2>/dev/null || true
    wait "$executor" "$admin" 2>/dev/null || true
}

for _ in $(seq 1 "$rounds"); do
    one http
    one link
done
