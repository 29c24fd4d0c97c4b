//! Chime executors in link mode (`chime executor --link`) as real processes, the `chime admin`
//! processes they link to, a journal their script jobs write, and a network in which the
//! executors reach the admin but the admin cannot reach them ([`Nat`]).
//!
//! A linked executor opens no port: it dials `GET <admin>/api/link` and the admin calls it down
//! that WebSocket. The tests run it where nothing else would work — in a network namespace
//! behind a router namespace that masquerades its traffic, like a container or a laptop behind
//! a NAT gateway — and check, besides the runs, that the admin indeed cannot reach it.

use super::process::{free_port, OwnedProcess};
use super::{Api, ACCESS_TOKEN, API_TOKEN};
use serde_json::Value;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The admins' context path (executors are given `http://host:port/xxl-job-admin`).
pub const CONTEXT_PATH: &str = "/xxl-job-admin";

/// Variable every linked executor started here has in its environment, set to its link id: its
/// script jobs inherit it and write it to the [`Journal`], which so says who ran each run.
pub const EXECUTOR_ID_VAR: &str = "LINKED_EXECUTOR_ID";

/// One `chime admin` process, killed with the test whatever way it ends.
pub struct AdminProcess {
    process: OwnedProcess,
    /// Its `--node-id` (named in the trigger report of every run it sends: `Admin：<node>`).
    pub node: String,
    /// Where it listens, and where the test and the executors reach it.
    pub addr: SocketAddr,
    /// Its stdout and stderr.
    pub log: PathBuf,
}

impl AdminProcess {
    /// Starts `chime admin` on `db_url`, listening on `addr`, with the tests' tokens, short
    /// scheduling timers and the default dead timeout (90 s: a real executor beats every
    /// 30 s), its output in `dir/<node>.log`. `extra` flags are appended. Waits until its
    /// `/healthz` answers.
    pub async fn start(db_url: &str, addr: SocketAddr, node: &str, dir: &Path, extra: &[&str]) -> AdminProcess {
        let log = dir.join(format!("{node}.log"));
        let mut command = Command::new(super::chime_binary());
        command
            .args(["admin", "--db", db_url, "--listen", &addr.to_string()])
            .args(["--context-path", CONTEXT_PATH, "--node-id", node])
            .args(["--tick", "200ms", "--lookahead", "2s"])
            .args(["--registry-refresh", "500ms", "--default-tz", "UTC"])
            .args(extra)
            .env("CHIME_API_TOKEN", API_TOKEN)
            .env("CHIME_ACCESS_TOKEN", ACCESS_TOKEN)
            .env("CHIME_ADMIN_PASSWORD", "linked-executor-test")
            // Plain log lines: the tests read them (who linked, from where).
            .env("NO_COLOR", "1")
            .env("RUST_LOG", "info,sqlx=warn");
        let process = OwnedProcess::spawn(&format!("chime admin {node}"), &mut command, Some(&log));
        let mut admin = AdminProcess {
            process,
            node: node.to_owned(),
            addr,
            log,
        };
        admin.wait_ready().await;
        admin
    }

    /// Waits (at most 60 s) until `/healthz` answers 200; fails at once if the process exited.
    async fn wait_ready(&mut self) {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(1))
            .no_proxy()
            .build()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.process.exited() {
                panic!(
                    "{} exited ({status}); its output:\n{}",
                    self.node,
                    self.process.output_tail(6000)
                );
            }
            let url = format!("http://{}/healthz", self.addr);
            if http.get(url).send().await.is_ok_and(|r| r.status() == 200) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{} did not answer /healthz within 60 s",
                self.node
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Its REST API.
    pub fn api(&self) -> Api {
        Api::new(self.addr)
    }

    /// Its base URL for executors, with the context path.
    pub fn base(&self) -> String {
        format!("http://{}{CONTEXT_PATH}", self.addr)
    }

    /// `kill -9`: no lease given back, no link closed cleanly.
    pub fn kill_9(&mut self) {
        self.process.kill_9();
    }

    /// What it has written so far.
    pub fn output(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

/// A running `chime executor --link`, killed (SIGKILL) when dropped.
pub struct LinkedExecutor {
    /// Its link id: the admin lists it as `link://<id>`.
    pub id: String,
    process: OwnedProcess,
    dir: tempfile::TempDir,
}

impl LinkedExecutor {
    /// Starts one linking to every admin of `admins` (base URLs with the context path) as `id`
    /// in group `app`, with the tests' access token, script jobs and the demo handlers enabled.
    /// In `netns` when given (`ip netns exec` execs it, so the pid is the executor's and the
    /// parent-death signal holds). The namespace shares the file system: its logs and script
    /// files are in a temporary directory the test reads. Does not wait for the links.
    pub fn start(admins: &[String], app: &str, id: &str, netns: Option<&str>) -> LinkedExecutor {
        LinkedExecutor::start_with_token(admins, app, id, netns, ACCESS_TOKEN)
    }

    /// [`LinkedExecutor::start`] with the access token `token`.
    pub fn start_with_token(
        admins: &[String],
        app: &str,
        id: &str,
        netns: Option<&str>,
        token: &str,
    ) -> LinkedExecutor {
        let bin = super::chime_binary();
        let dir = tempfile::tempdir().unwrap();
        let mut command = match netns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns]).arg(bin);
                c
            }
            None => Command::new(bin),
        };
        command
            .args([
                "executor",
                "--link",
                "--link-id",
                id,
                "--demo-handlers",
                "--enable-scripts",
            ])
            .args(["--admin", &admins.join(","), "--appname", app, "--token", token])
            .arg("--logdir")
            .arg(dir.path().join("runs"));
        // Only the flags above: no setting leaks in from the environment.
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("CHIME_") {
                command.env_remove(key);
            }
        }
        command
            .env(EXECUTOR_ID_VAR, id)
            .env("NO_COLOR", "1")
            .env("RUST_LOG", "info");
        let process = OwnedProcess::spawn(
            &format!("linked executor {app}/{id}"),
            &mut command,
            Some(&dir.path().join("output.log")),
        );
        LinkedExecutor {
            id: id.to_owned(),
            process,
            dir,
        }
    }

    /// The address the admin knows it by.
    pub fn address(&self) -> String {
        chime_protocol::link::address(&self.id)
    }

    /// Where it writes its run logs (`--logdir`).
    pub fn log_dir(&self) -> PathBuf {
        self.dir.path().join("runs")
    }

    /// `kill -9`: no goodbye on its links, no result for what it was running.
    pub fn kill_9(&mut self) {
        self.process.kill_9();
    }

    /// Everything it has written so far.
    pub fn output(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("output.log")).unwrap_or_default()
    }

    /// The end of its output, for failure messages.
    pub fn output_tail(&self) -> String {
        self.process.output_tail(4000)
    }
}

/// Waits (at most 60 s) until group `app` at `api` lists exactly the executors `ids`, each as a
/// live link (`link://<id>`, `linked: true`). Returns the group's executor entries.
pub async fn wait_linked(api: &Api, app: &str, ids: &[&str]) -> Vec<Value> {
    let mut want: Vec<String> = ids.iter().map(|id| chime_protocol::link::address(id)).collect();
    want.sort();
    super::eventually(60, &format!("{app} to list the linked executors {want:?}"), || async {
        let (_, v) = api.get(&format!("/v1/executors?group={app}")).await;
        let entries = v[0]["executors"].as_array().cloned().unwrap_or_default();
        let mut got: Vec<String> = entries
            .iter()
            .filter(|e| e["linked"] == true)
            .filter_map(|e| e["address"].as_str().map(str::to_owned))
            .collect();
        got.sort();
        if got == want && entries.len() == want.len() {
            Ok(entries)
        } else {
            Err(v.to_string())
        }
    })
    .await
}

/// One line a journal script wrote: one run as an executor ran it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The executor's link id ([`EXECUTOR_ID_VAR`]).
    pub executor: String,
    /// The run (`CHIME_LOG_ID`).
    pub run: i64,
    /// `CHIME_SHARD_INDEX`, `CHIME_SHARD_TOTAL`.
    pub shard: (i64, i64),
    /// The run's parameter (the script's first argument).
    pub param: String,
}

/// A file that GLUE_SHELL scripts append one line per run to, in whichever namespace they run:
/// what the executors really executed, counted apart from what the admin recorded.
pub struct Journal {
    /// The file.
    pub path: PathBuf,
}

impl Journal {
    /// A journal at `path` (created by the first run).
    pub fn new(path: PathBuf) -> Journal {
        Journal { path }
    }

    /// A GLUE_SHELL source that writes its run to the journal first (one `echo`, one
    /// `O_APPEND` write: lines of concurrent runs never mix), then runs `then`.
    pub fn script(&self, then: &str) -> String {
        format!(
            "#!/bin/bash\necho \"${{{EXECUTOR_ID_VAR}:-?}} $CHIME_LOG_ID $CHIME_SHARD_INDEX $CHIME_SHARD_TOTAL $1\" >> '{}'\n{then}\n",
            self.path.display()
        )
    }

    /// Every line so far.
    pub fn entries(&self) -> Vec<Entry> {
        let text = std::fs::read_to_string(&self.path).unwrap_or_default();
        text.lines()
            .filter_map(|line| {
                let mut fields = line.splitn(5, ' ');
                let executor = fields.next()?.to_owned();
                let run = fields.next()?.parse().ok()?;
                let index = fields.next()?.parse().ok()?;
                let total = fields.next()?.parse().ok()?;
                let param = fields.next().unwrap_or("").to_owned();
                Some(Entry {
                    executor,
                    run,
                    shard: (index, total),
                    param,
                })
            })
            .collect()
    }

    /// The lines of run `run`.
    pub fn of_run(&self, run: i64) -> Vec<Entry> {
        self.entries().into_iter().filter(|e| e.run == run).collect()
    }
}

/// Name prefix of the NAT namespaces (`scripts/test` removes leftovers by it).
pub const NETNS_PREFIX: &str = "chime-lnk-";

/// One executor's namespace behind the router.
pub struct ExecutorNs {
    /// `chime-lnk-<pid>-e<k>`.
    pub name: String,
    /// The executor's address (in the executors' subnet, which the host has no route to).
    pub ip: Ipv4Addr,
    /// The router's side of this namespace's veth pair (cut to take the executor off the net).
    router_if: String,
}

/// Executors' namespaces behind a router namespace that masquerades them (nftables), the
/// router joined to the host by an uplink veth pair on a /30:
///
/// ```text
///  host (the admin) ── uplink /30 ── router (ip_forward, nft masquerade) ─┬─ /30 ── e1
///                                                                         └─ /30 ── e2
/// ```
///
/// The host has a route to the uplink /30 only, not to the executors' subnet: the executors
/// reach the admin (their traffic leaves the router with the router's uplink address) and the
/// admin cannot reach them. Everything is removed when dropped (deleting a namespace deletes
/// its veth pairs), also when the test fails; needs root and nftables.
pub struct Nat {
    /// `chime-lnk-<pid>-r`.
    pub router: String,
    /// The executors' namespaces.
    pub executors: Vec<ExecutorNs>,
    /// The host's side of the uplink: where the admin listens.
    pub host_ip: Ipv4Addr,
    /// The router's side of the uplink: the address the admin sees the executors' links come from.
    pub router_ip: Ipv4Addr,
    /// The executors' subnet (a /29: one /30 per executor).
    pub subnet: String,
    host_if: String,
}

impl Nat {
    /// Creates the router and `n` (at most 2) executor namespaces, with addresses derived from
    /// this process's id so two test processes never share a name or a network.
    pub fn create(n: usize) -> Nat {
        assert!((1..=2).contains(&n), "the executors' /29 holds two /30s");
        let pid = std::process::id();
        let uplink = u32::from(Ipv4Addr::new(10, 205, 0, 0)) | ((pid & 0x3fff) << 2);
        let subnet = u32::from(Ipv4Addr::new(10, 204, 0, 0)) | ((pid & 0x1fff) << 3);
        let nat = Nat {
            router: format!("{NETNS_PREFIX}{pid}-r"),
            executors: (0..n)
                .map(|k| ExecutorNs {
                    name: format!("{NETNS_PREFIX}{pid}-e{}", k + 1),
                    ip: Ipv4Addr::from(subnet + 4 * k as u32 + 2),
                    router_if: format!("lk{pid:x}r{}", k + 1),
                })
                .collect(),
            host_ip: Ipv4Addr::from(uplink + 1),
            router_ip: Ipv4Addr::from(uplink + 2),
            subnet: format!("{}/29", Ipv4Addr::from(subnet)),
            // Interface names have at most 15 bytes: `lk` + pid in hex (≤ 6) + side (≤ 3).
            host_if: format!("lk{pid:x}uh"),
        };
        // Left over by an earlier test process with this pid that was killed outright.
        nat.remove();
        let router_up_if = format!("lk{pid:x}ur");
        ip(&["netns", "add", &nat.router]);
        ip(&[
            "link",
            "add",
            &nat.host_if,
            "type",
            "veth",
            "peer",
            "name",
            &router_up_if,
        ]);
        ip(&["link", "set", &router_up_if, "netns", &nat.router]);
        ip(&["addr", "add", &format!("{}/30", nat.host_ip), "dev", &nat.host_if]);
        ip(&["link", "set", &nat.host_if, "up"]);
        let r = nat.router.as_str();
        ip(&[
            "-n",
            r,
            "addr",
            "add",
            &format!("{}/30", nat.router_ip),
            "dev",
            &router_up_if,
        ]);
        ip(&["-n", r, "link", "set", &router_up_if, "up"]);
        ip(&["-n", r, "link", "set", "lo", "up"]);
        ip(&["-n", r, "route", "add", "default", "via", &nat.host_ip.to_string()]);
        run(
            "ip",
            &["netns", "exec", r, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1"],
            None,
        );
        // Source NAT for the executors' subnet leaving by the uplink: the host sees only the
        // router's address, and its answers find the way back through the connection tracking.
        let rules = format!(
            "table ip chime_nat {{\n  chain postrouting {{\n    type nat hook postrouting priority srcnat; policy accept;\n    ip saddr {} oifname \"{router_up_if}\" masquerade\n  }}\n}}\n",
            nat.subnet
        );
        run("ip", &["netns", "exec", r, "nft", "-f", "-"], Some(&rules));
        for (k, e) in nat.executors.iter().enumerate() {
            let gateway = Ipv4Addr::from(u32::from(e.ip) - 1);
            let ns_if = format!("lk{pid:x}e{}", k + 1);
            ip(&["netns", "add", &e.name]);
            ip(&[
                "-n",
                r,
                "link",
                "add",
                &e.router_if,
                "type",
                "veth",
                "peer",
                "name",
                &ns_if,
            ]);
            ip(&["-n", r, "link", "set", &ns_if, "netns", &e.name]);
            ip(&["-n", r, "addr", "add", &format!("{gateway}/30"), "dev", &e.router_if]);
            ip(&["-n", r, "link", "set", &e.router_if, "up"]);
            ip(&["-n", &e.name, "addr", "add", &format!("{}/30", e.ip), "dev", &ns_if]);
            ip(&["-n", &e.name, "link", "set", &ns_if, "up"]);
            ip(&["-n", &e.name, "link", "set", "lo", "up"]);
            ip(&["-n", &e.name, "route", "add", "default", "via", &gateway.to_string()]);
        }
        nat
    }

    /// Takes executor `k`'s link down at the router: nothing passes between it and the admin
    /// until [`Nat::restore`]. (Cut at the router, the executor keeps its address and default
    /// route, as a host behind a gateway that lost its line does.)
    pub fn cut(&self, k: usize) {
        ip(&["-n", &self.router, "link", "set", &self.executors[k].router_if, "down"]);
    }

    /// Brings executor `k`'s link up again (its address and connected route come back with it).
    pub fn restore(&self, k: usize) {
        ip(&["-n", &self.router, "link", "set", &self.executors[k].router_if, "up"]);
    }

    /// Drops every packet between executor `k` and the admin at the router, without a word:
    /// the line stays up and the router keeps its NAT mapping, as a firewall or a NAT box
    /// further away that silently discards traffic. Undone by [`Nat::pass`].
    pub fn drop_silently(&self, k: usize) {
        let port = &self.executors[k].router_if;
        let rules = format!(
            "table inet chime_cut_{k} {{\n  chain forward {{\n    type filter hook forward priority filter; policy accept;\n    iifname \"{port}\" drop\n    oifname \"{port}\" drop\n  }}\n}}\n"
        );
        run("ip", &["netns", "exec", &self.router, "nft", "-f", "-"], Some(&rules));
    }

    /// Lets executor `k`'s packets pass again after [`Nat::drop_silently`].
    pub fn pass(&self, k: usize) {
        run(
            "ip",
            &[
                "netns",
                "exec",
                &self.router,
                "nft",
                "delete",
                "table",
                "inet",
                &format!("chime_cut_{k}"),
            ],
            None,
        );
    }

    /// Deletes the namespaces (which deletes their veth pairs) and the host side of the uplink,
    /// should it have stayed behind; quietly, whatever of it exists.
    fn remove(&self) {
        let mut names: Vec<&str> = self.executors.iter().map(|e| e.name.as_str()).collect();
        names.push(&self.router);
        for name in names {
            quiet("ip", &["netns", "delete", name]);
        }
        quiet("ip", &["link", "delete", &self.host_if]);
    }
}

impl Drop for Nat {
    fn drop(&mut self) {
        self.remove();
    }
}

/// A TCP listener inside a namespace (`python3`, which the pyxxl tests need anyway): something
/// the test can try to reach from outside. Killed when dropped.
pub struct NsListener {
    _process: OwnedProcess,
    /// Its port (on every address of the namespace).
    pub port: u16,
}

impl NsListener {
    /// Starts it in `netns` and waits until it accepts a connection made from `probe_from`
    /// (a namespace that has a route to it, e.g. the router), at `ip`.
    pub async fn start(netns: &str, ip: Ipv4Addr, probe_from: &str) -> NsListener {
        let port = free_port();
        let program = format!(
            "import socket, time\ns = socket.socket()\ns.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\ns.bind(('0.0.0.0', {port}))\ns.listen(64)\nwhile True:\n    c, _ = s.accept()\n    c.close()\n"
        );
        let mut command = Command::new("ip");
        command.args(["netns", "exec", netns, "python3", "-c", &program]);
        let process = OwnedProcess::spawn(&format!("listener in {netns}"), &mut command, None);
        let listener = NsListener {
            _process: process,
            port,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while !tcp_connects_from(probe_from, ip, port) {
            assert!(
                Instant::now() < deadline,
                "the listener in {netns} at {ip}:{port} is not reachable from {probe_from}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        listener
    }
}

/// Whether a TCP connection to `ip:port` made inside namespace `netns` succeeds within 3 s.
pub fn tcp_connects_from(netns: &str, ip: Ipv4Addr, port: u16) -> bool {
    let program = format!("import socket\ns = socket.create_connection(('{ip}', {port}), timeout=3)\ns.close()\n");
    Command::new("ip")
        .args(["netns", "exec", netns, "python3", "-c", &program])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether a TCP connection from the test process (the host's namespace, where the admin is)
/// to `ip:port` succeeds within 3 s.
pub fn tcp_connects_from_host(ip: Ipv4Addr, port: u16) -> bool {
    std::net::TcpStream::connect_timeout(&SocketAddr::new(IpAddr::V4(ip), port), Duration::from_secs(3)).is_ok()
}

/// Runs `ip ARGS`, which must succeed.
fn ip(args: &[&str]) {
    run("ip", args, None);
}

/// Runs `program ARGS` (with `stdin` as its input), which must succeed.
fn run(program: &str, args: &[&str], stdin: Option<&str>) {
    let mut child = Command::new(program)
        .args(args)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{program} does not start: {e}"));
    if let Some(text) = stdin {
        child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{program} {} failed ({}): {} (these tests need root, iproute2 and nftables)",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    );
}

/// Runs `program ARGS`, ignoring its outcome.
fn quiet(program: &str, args: &[&str]) {
    let _ = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}
