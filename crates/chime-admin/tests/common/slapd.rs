//! A real OpenLDAP server (Debian's `slapd`) for login tests: started on a free loopback port
//! with a temporary database, the `memberof` overlay (users' `memberOf`, as Active Directory
//! gives it) and `ppolicy` (locked accounts), filled over LDAP with `ldapadd`. Killed when
//! dropped. `scripts/test` installs `slapd` and `ldap-utils`.

use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The directory's suffix.
pub const SUFFIX: &str = "dc=example,dc=org";
/// The directory manager, who also serves as the search account.
pub const ADMIN_DN: &str = "cn=admin,dc=example,dc=org";
/// Its password.
pub const ADMIN_PASSWORD: &str = "admin-secret";

/// A running slapd.
pub struct Slapd {
    child: Child,
    _dir: tempfile::TempDir,
    /// `ldap://127.0.0.1:PORT`.
    pub url: String,
}

impl Slapd {
    /// Starts slapd with the organisational units `people`, `groups` and `policies` and a
    /// default password policy that honours locks.
    pub fn start() -> Slapd {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db");
        std::fs::create_dir(&db).unwrap();
        let conf = dir.path().join("slapd.conf");
        std::fs::write(
            &conf,
            format!(
                "include /etc/ldap/schema/core.schema\ninclude /etc/ldap/schema/cosine.schema\n\
                 include /etc/ldap/schema/inetorgperson.schema\ninclude /etc/ldap/schema/nis.schema\n\
                 modulepath /usr/lib/ldap\nmoduleload back_mdb\nmoduleload memberof\nmoduleload ppolicy\n\
                 pidfile {}/slapd.pid\ndatabase mdb\nsuffix \"{SUFFIX}\"\nrootdn \"{ADMIN_DN}\"\n\
                 rootpw {ADMIN_PASSWORD}\ndirectory {}\nmaxsize 10485760\noverlay memberof\noverlay ppolicy\n\
                 ppolicy_default \"cn=default,ou=policies,{SUFFIX}\"\n",
                dir.path().display(),
                db.display()
            ),
        )
        .unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("ldap://127.0.0.1:{port}");
        // In /usr/sbin, which a user's PATH may not hold.
        let bin = ["/usr/sbin/slapd", "/usr/local/sbin/slapd"]
            .into_iter()
            .find(|p| std::path::Path::new(p).exists())
            .unwrap_or("slapd");
        let child = Command::new(bin)
            .arg("-f")
            .arg(&conf)
            .args(["-h", &format!("{url}/"), "-d", "0"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("slapd (Debian package slapd; scripts/test installs it)");
        let slapd = Slapd { child, _dir: dir, url };
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "slapd did not listen on {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
        slapd.add(&format!(
            "dn: {SUFFIX}\nobjectClass: dcObject\nobjectClass: organization\no: Example\ndc: example\n\n\
             dn: ou=people,{SUFFIX}\nobjectClass: organizationalUnit\nou: people\n\n\
             dn: ou=groups,{SUFFIX}\nobjectClass: organizationalUnit\nou: groups\n\n\
             dn: ou=policies,{SUFFIX}\nobjectClass: organizationalUnit\nou: policies\n\n\
             dn: cn=default,ou=policies,{SUFFIX}\nobjectClass: pwdPolicy\nobjectClass: device\ncn: default\n\
             pwdAttribute: userPassword\npwdLockout: TRUE\n"
        ));
        slapd
    }

    /// A person `uid=NAME,ou=people` with `password`.
    pub fn add_user(&self, name: &str, password: &str) {
        self.add(&format!(
            "dn: uid={name},ou=people,{SUFFIX}\nobjectClass: inetOrgPerson\nuid: {name}\ncn: {name}\nsn: {name}\n\
             userPassword: {password}\n"
        ));
    }

    /// A group `cn=NAME,ou=groups` of `members` (user names).
    pub fn add_group(&self, name: &str, members: &[&str]) {
        let members: String = members
            .iter()
            .map(|m| format!("member: uid={m},ou=people,{SUFFIX}\n"))
            .collect();
        self.add(&format!(
            "dn: cn={name},ou=groups,{SUFFIX}\nobjectClass: groupOfNames\ncn: {name}\n{members}"
        ));
    }

    /// Moves user `name` out of group `from` and into group `to`.
    pub fn move_user(&self, name: &str, from: &str, to: &str) {
        for (group, op) in [(from, "delete"), (to, "add")] {
            self.modify(&format!(
                "dn: cn={group},ou=groups,{SUFFIX}\nchangetype: modify\n{op}: member\n\
                 member: uid={name},ou=people,{SUFFIX}\n"
            ));
        }
    }

    /// Locks user `name` for good (ppolicy's `pwdAccountLockedTime`).
    pub fn lock(&self, name: &str) {
        self.modify(&format!(
            "dn: uid={name},ou=people,{SUFFIX}\nchangetype: modify\nadd: pwdAccountLockedTime\n\
             pwdAccountLockedTime: 000001010000Z\n"
        ));
    }

    /// Stops the server (SIGKILL): the directory is down.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn add(&self, ldif: &str) {
        self.tool("ldapadd", ldif);
    }

    fn modify(&self, ldif: &str) {
        self.tool("ldapmodify", ldif);
    }

    fn tool(&self, tool: &str, ldif: &str) {
        let mut c = Command::new(tool)
            .args(["-x", "-D", ADMIN_DN, "-w", ADMIN_PASSWORD, "-H", &self.url])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("ldap-utils (Debian package; scripts/test installs it)");
        c.stdin.take().unwrap().write_all(ldif.as_bytes()).unwrap();
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{tool}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

impl Drop for Slapd {
    fn drop(&mut self) {
        self.kill();
    }
}
