#!/usr/bin/env python3
"""A workflow chain's cost per step, end to end, as docs/BENCHMARKS.md ("Workflows") reports it.

    crates/chime-admin/benches/workflow_chain.py --chime target/release/chime [--nodes 40]
        [--instances 10] [--db URL] [--handler noopJobHandler]

Starts `chime admin` (SQLite in a temporary directory unless --db names another database) and
`chime executor --demo-handlers` on free loopback ports, creates a group, a job running
`--handler` and a workflow whose nodes form one chain, then triggers it `--instances` times, one
after the other, each once the previous one ended. Per instance it reads the nodes' times from
`GET /v1/workflow-instances/{id}` and prints:

* step: (last node finished - first node finished) / (nodes - 1), what one more node in a
  chain costs end to end: the result recorded, the next node decided, sent, run, reported;
* whole: the instance's end - its creation, over the number of nodes;
* admin CPU per step: the admin process's user+system time over the instances / their steps.

The median and the spread over the instances follow. Nothing here is asserted; speed is
measured, not tested.
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Api:
    def __init__(self, base, token):
        self.base = base
        self.token = token

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Authorization", "Bearer " + self.token)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                text = r.read()
        except urllib.error.HTTPError as e:
            sys.exit(f"{method} {path}: {e.code} {e.read().decode(errors='replace')}")
        return json.loads(text) if text else None


def cpu_seconds(pid):
    """User + system time of a process, from /proc (clock ticks)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_until(what, check, seconds=60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.02)
    sys.exit(f"timed out waiting for {what}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--chime", required=True, help="the chime binary (a release build)")
    p.add_argument("--nodes", type=int, default=40)
    p.add_argument("--instances", type=int, default=10)
    p.add_argument("--db", help="database URL (default: SQLite in a temporary directory)")
    p.add_argument("--handler", default="noopJobHandler")
    p.add_argument("--param", default="")
    args = p.parse_args()

    work = tempfile.mkdtemp(prefix="chime-chain-")
    admin_port, executor_port = free_port(), free_port()
    access, api_token = os.urandom(16).hex(), os.urandom(16).hex()
    db = args.db or f"sqlite://{work}/chain.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHIME_")}
    env["CHIME_ADMIN_PASSWORD"] = "chain-bench"
    env["RUST_LOG"] = "warn"
    procs = []
    try:
        admin = subprocess.Popen(
            [args.chime, "admin", "--db", db, "--listen", f"127.0.0.1:{admin_port}",
             "--access-token", access, "--api-token", api_token],
            env=env, stdout=subprocess.DEVNULL, stderr=open(f"{work}/admin.log", "w"))
        procs.append(admin)
        url = f"http://127.0.0.1:{admin_port}"
        api = Api(url, api_token)

        def admin_up():
            try:
                with urllib.request.urlopen(url + "/healthz", timeout=1):
                    return True
            except OSError:
                return False

        wait_until("the admin", admin_up)
        executor = subprocess.Popen(
            [args.chime, "executor", "--admin", url, "--appname", "chain", "--access-token", access,
             "--listen", f"127.0.0.1:{executor_port}", "--demo-handlers", "--logdir", f"{work}/logs"],
            env=env, stdout=subprocess.DEVNULL, stderr=open(f"{work}/executor.log", "w"))
        procs.append(executor)
        group = api.call("POST", "/v1/groups", {"app_name": "chain", "title": "chain"})
        wait_until("the executor", lambda: str(executor_port) in json.dumps(api.call("GET", "/v1/executors")))
        # The admin reads the registrations into the address lists it routes by every
        # --registry-refresh (5 s by default).
        time.sleep(6)
        job = api.call("POST", "/v1/jobs", {
            "group_id": group["id"], "description": "chain node", "schedule_type": "NONE",
            "handler": args.handler, "param": args.param})
        keys = [f"n{i}" for i in range(args.nodes)]
        workflow = api.call("POST", "/v1/workflows", {
            "name": "chain", "schedule_type": "NONE",
            "definition": {
                "nodes": [{"key": k, "job_id": job["id"]} for k in keys],
                "edges": [{"from": a, "to": b} for a, b in zip(keys, keys[1:])],
            }})

        steps, wholes = [], []
        cpu_before = cpu_seconds(admin.pid)
        for _ in range(args.instances):
            started = api.call("POST", f"/v1/workflows/{workflow['id']}/trigger")
            iid = started["instance_id"]

            def ended():
                inst = api.call("GET", f"/v1/workflow-instances/{iid}")
                return inst if inst["finished_at"] else None

            inst = wait_until(f"instance {iid}", ended, seconds=600)
            if inst["state"] != "succeeded":
                sys.exit(f"instance {iid} ended {inst['state']}: {json.dumps(inst['nodes'])[:600]}")
            nodes = sorted(inst["nodes"], key=lambda n: int(n["node"][1:]))
            steps.append((nodes[-1]["finished_at"] - nodes[0]["finished_at"]) / (len(nodes) - 1))
            wholes.append((inst["finished_at"] - inst["created_at"]) / len(nodes))
        cpu = cpu_seconds(admin.pid) - cpu_before
        per_step_cpu_ms = cpu * 1000 / (args.instances * (args.nodes - 1))

        def show(name, xs):
            print(f"{name:>6}: median {statistics.median(xs):7.2f} ms, min {min(xs):7.2f}, max {max(xs):7.2f}")

        print(f"chain of {args.nodes} nodes ({args.handler}), {args.instances} instances, {db.split(':')[0]}")
        show("step", steps)
        show("whole", wholes)
        print(f"admin CPU per step: {per_step_cpu_ms:.2f} ms")
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        if os.environ.get("CHAIN_KEEP"):
            print("kept", work)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
