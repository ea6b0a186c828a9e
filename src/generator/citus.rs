//! Partitions for the nodes of a Citus cluster, by construction from the cluster's metadata.
//!
//! Pure Rust, no PostgreSQL: the glue reads the node's group from Citus's own catalog
//! (`pg_dist_local_group`, `pg_dist_node`) and hands it to the lineage's judgment
//! ([`crate::generator::lineage::State::judge`]) as [`Source::Citus`].
//!
//! Citus numbers each *node group* (a primary and its standbys) from a sequence that never
//! reuses a number: the coordinator is group 0, each worker added gets the next number, and a
//! promoted standby keeps its primary's group. So a group is a name no other node of the
//! cluster can ever have, and sno turns it into partitions:
//!
//! | bits of the partition | 15..12       | 11..0                  |
//! |-----------------------|--------------|------------------------|
//! | meaning               | generation k | group g (0..=4095)     |
//!
//! `partition = k * 4096 + g`. Group g owns the 16 partitions `g`, `g + 4096`, ..., `g + 61440`,
//! and no other group has any of them: two groups never share a partition. Within a group the
//! *generation* changes whenever the group's data directory becomes a new incarnation that
//! may meet IDs it cannot see (a promoted standby, synchronous or asynchronous, a PITR restore):
//! it takes the lowest generation its lineage does not know to be used. A worker's IDs end up in
//! shards on other workers, so IDs its primary made and never sent to a standby may already be
//! stored elsewhere when that standby is promoted; with a generation of its own the standby
//! cannot make them again. Generation 15 (partitions 61440 up) is reserved
//! ([`crate::generator::reserved`]): once a group has used its 15 live generations, the one
//! whose recorded bound is oldest is taken over after that bound, as a promoted standby takes
//! over an explicit partition.
//!
//! Group 0 is the coordinator only once the cluster has nodes (`citus_is_coordinator()`): every
//! node reads 0 in `pg_dist_local_group` until the coordinator activates it.

/// Groups that have partitions of their own: 0..=4095.
pub const GROUPS: u32 = 4096;
/// Generations of each group's partitions.
pub const GENERATIONS: u32 = 16;

/// What the glue read from Citus in this database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Node {
    /// A node of a Citus cluster, in this group (workers are activated; group 0 is the
    /// coordinator of a cluster that has nodes).
    Group(u32),
    /// The citus extension is installed, but this server is not (yet) a node of a cluster:
    /// its local group reads 0 and it knows no nodes.
    NotActivated,
}

/// The partition of `group` in `generation`, if the group has partitions.
pub const fn partition(group: u32, generation: u32) -> Option<u16> {
    if group < GROUPS && generation < GENERATIONS {
        Some((generation * GROUPS + group) as u16)
    } else {
        None
    }
}

/// The group whose partition `p` would be.
pub const fn group_of(p: u16) -> u32 {
    p as u32 % GROUPS
}

/// The generation of `p` within its group.
pub const fn generation_of(p: u16) -> u32 {
    p as u32 / GROUPS
}

/// The generations a group's live generators take: 0..=14. Generation 15 (partitions 61440 up)
/// is the reserved range ([`crate::generator::reserved`]), kept only by a lineage that used it
/// before the range was reserved.
pub const LIVE_GENERATIONS: u32 = GENERATIONS - 1;

/// The partitions of `group`, generation 0 first (none for a group past [`GROUPS`]).
pub fn partitions(group: u32) -> impl Iterator<Item = u16> {
    (0..GENERATIONS).filter_map(move |k| partition(group, k))
}

/// The partitions of `group` a live generator may take: generations 0..=14.
pub fn live_partitions(group: u32) -> impl Iterator<Item = u16> {
    (0..LIVE_GENERATIONS).filter_map(move |k| partition(group, k))
}

/// Where the partition comes from, as the lineage's judgment is told.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// `sno.partition`: the administrator's number, always used.
    Explicit(u16),
    /// Nothing configured and no Citus read in this session: derived from the system identifier
    /// and the incarnation, unless the lineage already belongs to a Citus group (then that).
    Derived,
    /// The node group Citus gives this server.
    Citus(Node),
}

/// Whether this database's reading `here` may decide the node's group, given what was published
/// (`published`) and the group the lineage keeps (`kept`), when no `sno.citus_database` names
/// the deciding database: a group published is never replaced by another one, nor by "not
/// activated"; a group kept is not replaced by another group (a node re-added under a new
/// group needs `sno.citus_database`), but "not activated" may be read beside it (a node removed
/// from its cluster keeps its group's partitions: the lineage's judgment does that); a server
/// not yet activated may become a group's node.
pub fn agrees(here: Node, published: Option<Node>, kept: Option<u32>) -> Result<(), Node> {
    let server = match (published, kept, here) {
        (Some(Node::Group(g)), _, _) => Node::Group(g),
        (_, Some(g), Node::Group(_)) => Node::Group(g),
        _ => return Ok(()),
    };
    if here == server {
        Ok(())
    } else {
        Err(server)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn groups_never_share_a_partition() {
        let mut seen = HashSet::new();
        for g in 0..GROUPS {
            for p in partitions(g) {
                assert!(seen.insert(p), "partition {p} twice");
                assert_eq!(group_of(p), g);
            }
        }
        assert_eq!(seen.len(), 65_536);
    }

    #[test]
    fn generation_zero_is_the_group_number() {
        assert_eq!(partition(0, 0), Some(0));
        assert_eq!(partition(3, 0), Some(3));
        assert_eq!(partition(3, 1), Some(4099));
        assert_eq!(partition(4095, 15), Some(65_535));
        assert_eq!(generation_of(4099), 1);
        assert_eq!(partition(4096, 0), None);
        assert_eq!(partition(1, 16), None);
        assert_eq!(partitions(70_000).count(), 0);
    }

    #[test]
    fn only_an_agreeing_database_decides() {
        let g = Node::Group;
        let na = Node::NotActivated;
        // Nothing known yet: whatever a database says.
        assert!(agrees(g(3), None, None).is_ok());
        assert!(agrees(na, None, None).is_ok());
        // Not activated, then activated: the group wins.
        assert!(agrees(g(3), Some(na), None).is_ok());
        // A group is never replaced, by another group or by "not activated".
        assert_eq!(agrees(g(4), Some(g(3)), None), Err(g(3)));
        assert_eq!(agrees(na, Some(g(3)), None), Err(g(3)));
        // Nor is the group the lineage keeps, by another group (after a restart, nothing
        // published yet); a node removed from its cluster reads "not activated" and keeps it.
        assert_eq!(agrees(g(4), None, Some(3)), Err(g(3)));
        assert!(agrees(na, None, Some(3)).is_ok());
        assert!(agrees(g(3), None, Some(3)).is_ok());
        assert!(agrees(g(3), Some(na), Some(3)).is_ok());
    }
}
