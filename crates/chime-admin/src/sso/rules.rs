//! Which Chime roles a directory's groups give (`--sso-roles`): rules `GROUP => admin` or
//! `GROUP => APP:ROLE`, separated by `;` or new lines. A group is named by its full DN
//! (`cn=billing-ops,ou=groups,dc=example,dc=org`) or by its first value (`billing-ops`), in any
//! case; for OpenID Connect, by the claim's value. A user holds every role their groups give,
//! the highest one per executor group; a rule giving `admin` makes them an administrator.
//!
//! ```text
//! chime-admins => admin; billing-ops => billing:operator; billing-devs => billing:editor
//! ```

use crate::api::GroupRole;
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// What one rule gives.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Grant {
    /// The administrator role.
    Admin,
    /// A role in the executor group of this app name.
    Group { app: String, role: GroupRole },
}

/// One rule: a directory group and what it gives.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    /// The group's name, lower case.
    group: String,
    grant: Grant,
}

/// The rules, in the order given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoleRules {
    rules: Vec<Rule>,
}

/// What a user's directory groups give them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mapped {
    /// An administrator.
    pub admin: bool,
    /// The highest role given in each executor group, by app name.
    pub roles: BTreeMap<String, GroupRole>,
}

impl Mapped {
    /// True when the groups give nothing at all.
    pub fn is_empty(&self) -> bool {
        !self.admin && self.roles.is_empty()
    }
}

impl RoleRules {
    /// True when no rule is set.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// What `groups` (DNs or names, as the directory gives them) give.
    pub fn apply(&self, groups: &[String]) -> Mapped {
        let mut names: Vec<String> = Vec::with_capacity(groups.len() * 2);
        for g in groups {
            names.push(g.trim().to_lowercase());
            if let Some(first) = first_value(g) {
                names.push(first.to_lowercase());
            }
        }
        let mut out = Mapped::default();
        for rule in self.rules.iter().filter(|r| names.contains(&r.group)) {
            match &rule.grant {
                Grant::Admin => out.admin = true,
                Grant::Group { app, role } => {
                    let held = out.roles.entry(app.clone()).or_insert(*role);
                    *held = (*held).max(*role);
                }
            }
        }
        out
    }
}

/// The value of a DN's first attribute (`billing-ops` of `cn=billing-ops,ou=groups,…`);
/// `None` for a name that is not a DN.
fn first_value(dn: &str) -> Option<&str> {
    let first = dn.split(',').next()?;
    let (_, value) = first.split_once('=')?;
    Some(value.trim())
}

impl FromStr for RoleRules {
    type Err = String;

    fn from_str(text: &str) -> Result<RoleRules, String> {
        let mut rules = Vec::new();
        for part in text.split([';', '\n']).map(str::trim).filter(|p| !p.is_empty()) {
            let (group, target) = part
                .split_once("=>")
                .ok_or_else(|| format!("'{part}': write GROUP => admin or GROUP => APP:ROLE"))?;
            let (group, target) = (group.trim(), target.trim());
            if group.is_empty() {
                return Err(format!("'{part}': no group before =>"));
            }
            let grant = if target == "admin" {
                Grant::Admin
            } else {
                let (app, role) = target
                    .rsplit_once(':')
                    .ok_or_else(|| format!("'{part}': after => write admin or APP:ROLE"))?;
                let role = GroupRole::parse(role.trim()).ok_or_else(|| {
                    format!("'{part}': '{role}' is not a role (viewer, operator, editor, group_admin)")
                })?;
                let app = app.trim();
                if app.is_empty() {
                    return Err(format!("'{part}': no executor group (app name) before :{role}"));
                }
                Grant::Group {
                    app: app.to_owned(),
                    role,
                }
            };
            rules.push(Rule {
                group: group.to_lowercase(),
                grant,
            });
        }
        Ok(RoleRules { rules })
    }
}

impl fmt::Display for RoleRules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .rules
            .iter()
            .map(|r| match &r.grant {
                Grant::Admin => format!("{} => admin", r.group),
                Grant::Group { app, role } => format!("{} => {app}:{role}", r.group),
            })
            .collect();
        f.write_str(&parts.join("; "))
    }
}

// In a settings file: the rules as `--sso-roles` takes them.
crate::setting_text::text_setting!(RoleRules, display);

#[cfg(test)]
mod tests {
    use super::*;

    fn groups(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn groups_give_the_highest_role_per_executor_group() {
        let rules: RoleRules = "billing-ops => billing:operator; cn=billing-devs,ou=groups,dc=x => billing:editor\n\
                                Audit => reports:viewer"
            .parse()
            .unwrap();
        let m = rules.apply(&groups(&[
            "cn=Billing-Ops,ou=groups,dc=x",
            "cn=billing-devs,ou=groups,dc=x",
            "audit",
        ]));
        assert!(!m.admin);
        assert_eq!(m.roles.get("billing"), Some(&GroupRole::Editor));
        assert_eq!(m.roles.get("reports"), Some(&GroupRole::Viewer));
        assert!(rules.apply(&groups(&["cn=other,dc=x"])).is_empty());
        let admin: RoleRules = "cn=chime-admins,ou=groups,dc=example,dc=org => admin".parse().unwrap();
        assert!(
            admin
                .apply(&groups(&["CN=Chime-Admins,OU=Groups,DC=example,DC=org"]))
                .admin
        );
    }

    #[test]
    fn bad_rules_are_refused_with_what_to_write() {
        for bad in [
            "ops",
            "=> admin",
            "ops => billing",
            "ops => billing:owner",
            "ops => :viewer",
        ] {
            let e = bad.parse::<RoleRules>().unwrap_err();
            assert!(e.contains(bad.split("=>").next().unwrap().trim()), "{bad}: {e}");
        }
        assert!("".parse::<RoleRules>().unwrap().is_empty());
        let r: RoleRules = "a => admin;b => x:group_admin".parse().unwrap();
        assert_eq!(r.to_string().parse::<RoleRules>().unwrap(), r);
    }
}
