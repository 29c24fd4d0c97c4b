//! Roles per executor group: what a user (or a key) may do in one group. Administrators hold
//! every role in every group; other users hold one role in each group they are given.
//!
//! | role | may |
//! | --- | --- |
//! | viewer | read the group's jobs, runs, logs and executors |
//! | operator | also trigger, kill, start and stop (pause) its jobs; not edit them |
//! | editor | also create, edit and delete its jobs, clear its runs |
//! | group admin | also manage who holds which role in the group |

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A role in one executor group, from the least to the most (the order compares them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GroupRole {
    /// Reads the group.
    Viewer,
    /// Also runs, kills, starts and stops its jobs.
    Operator,
    /// Also creates, edits and deletes its jobs.
    Editor,
    /// Also manages the group's members.
    GroupAdmin,
}

impl GroupRole {
    /// Every role, from the least.
    pub const ALL: [GroupRole; 4] = [
        GroupRole::Viewer,
        GroupRole::Operator,
        GroupRole::Editor,
        GroupRole::GroupAdmin,
    ];

    /// Its wire name, as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            GroupRole::Viewer => "viewer",
            GroupRole::Operator => "operator",
            GroupRole::Editor => "editor",
            GroupRole::GroupAdmin => "group_admin",
        }
    }

    /// The role named `name`.
    pub fn parse(name: &str) -> Option<GroupRole> {
        GroupRole::ALL.into_iter().find(|r| r.as_str() == name)
    }

    /// The role a user had before roles per group: an editor of each group when they could
    /// write, else a viewer.
    pub fn of_legacy(can_write: bool) -> GroupRole {
        if can_write {
            GroupRole::Editor
        } else {
            GroupRole::Viewer
        }
    }
}

impl std::fmt::Display for GroupRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One group and the role held in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupGrant {
    /// The executor group.
    pub group_id: i64,
    /// The role in it.
    pub role: GroupRole,
}

/// A member of an executor group, as its group admins see them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = super::schema::exact)]
pub struct GroupMember {
    /// The user's id.
    pub user_id: i64,
    /// Their login name.
    pub username: String,
    /// Their role in the group.
    pub role: GroupRole,
}

/// A change of one member's role in a group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemberChange {
    /// The user's login name.
    #[schemars(length(min = 1, max = 64))]
    pub username: String,
    /// Their new role in the group; `null` takes the group from them.
    pub role: Option<GroupRole>,
}

/// Most groups one user may hold roles in (the stored list's column holds 4,096 characters).
pub const MAX_GRANTS: usize = 200;

/// The grants as stored: `id:role` pairs, comma-separated (`3:editor,7:viewer`).
pub fn grants_text(grants: &[GroupGrant]) -> String {
    grants
        .iter()
        .map(|g| format!("{}:{}", g.group_id, g.role))
        .collect::<Vec<_>>()
        .join(",")
}

/// The grants of a stored list; a pair that cannot be read (written by a newer version) is
/// left out, which gives less access, never more.
pub fn grants_of_text(text: &str) -> Vec<GroupGrant> {
    text.split(',')
        .filter_map(|pair| {
            let (id, role) = pair.trim().split_once(':')?;
            Some(GroupGrant {
                group_id: id.parse().ok()?,
                role: GroupRole::parse(role)?,
            })
        })
        .collect()
}

/// `grants` sorted by group, one per group (the last one given wins), checked: `Err` names
/// the first group id that is not one.
pub fn normalised(grants: &[GroupGrant]) -> Result<Vec<GroupGrant>, i64> {
    if let Some(bad) = grants.iter().find(|g| g.group_id < 1) {
        return Err(bad.group_id);
    }
    let mut by_group = std::collections::BTreeMap::new();
    for g in grants {
        by_group.insert(g.group_id, g.role);
    }
    Ok(by_group
        .into_iter()
        .map(|(group_id, role)| GroupGrant { group_id, role })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_order_from_viewer_to_group_admin() {
        assert!(GroupRole::Viewer < GroupRole::Operator);
        assert!(GroupRole::Operator < GroupRole::Editor);
        assert!(GroupRole::Editor < GroupRole::GroupAdmin);
        for r in GroupRole::ALL {
            assert_eq!(GroupRole::parse(r.as_str()), Some(r));
            assert_eq!(serde_json::to_value(r).unwrap(), r.as_str());
        }
    }

    #[test]
    fn grants_are_stored_as_pairs_and_unreadable_ones_give_nothing() {
        let g = vec![
            GroupGrant {
                group_id: 3,
                role: GroupRole::Editor,
            },
            GroupGrant {
                group_id: 7,
                role: GroupRole::GroupAdmin,
            },
        ];
        assert_eq!(grants_text(&g), "3:editor,7:group_admin");
        assert_eq!(grants_of_text("3:editor,7:group_admin"), g);
        assert_eq!(grants_of_text("3:owner,x:viewer,,7:group_admin"), g[1..]);
        assert_eq!(grants_of_text(""), vec![]);
    }

    #[test]
    fn one_grant_per_group_the_last_winning() {
        let given = [
            GroupGrant {
                group_id: 5,
                role: GroupRole::Viewer,
            },
            GroupGrant {
                group_id: 2,
                role: GroupRole::Operator,
            },
            GroupGrant {
                group_id: 5,
                role: GroupRole::Editor,
            },
        ];
        let n = normalised(&given).unwrap();
        assert_eq!(
            n.iter().map(|g| (g.group_id, g.role)).collect::<Vec<_>>(),
            vec![(2, GroupRole::Operator), (5, GroupRole::Editor)]
        );
        assert_eq!(
            normalised(&[GroupGrant {
                group_id: 0,
                role: GroupRole::Viewer
            }]),
            Err(0)
        );
    }
}
