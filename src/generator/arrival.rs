//! Rows of sno's own tables that arrive by logical replication.
//!
//! A `FOR ALL TABLES` publication (or `FOR TABLES IN SCHEMA sno_internal`) publishes sno's own
//! tables with the application's: the reserved partitions granted to `sno_generate_at`, the
//! lease pool, the leases and the registry's ledger. They describe the *publisher's* lineage, its
//! grants and its holders. Applied on a subscriber they would collide with its own rows (primary
//! keys: the apply worker retries forever, and its slot holds the publisher's WAL), or, applied
//! where the subscriber had none, make its registry believe its pool came from another server.
//!
//! So sno's own state is kept out: a row of those tables that a replication worker applies is
//! dropped (its `BEFORE` row trigger returns nothing), and the subscriber's registry stays its
//! own. What such a row says is still worth one thing: a reserved partition the publisher
//! granted (to `sno_generate_at` or to its lease pool) is one the subscriber will never grant,
//! as a restore's rows teach a restored database ([`Arrival::DropNotingGrant`]).

/// Whether a background worker, by its entry point, applies changes another server published:
/// PostgreSQL's own apply, table-synchronization and parallel-apply workers (the entry point's
/// name changed across majors: PostgreSQL 15 and 16 run table synchronization in
/// `ApplyWorkerMain`, 17 and later in `TablesyncWorkerMain`), and those of the replication extensions
/// that apply rows through the executor (pglogical, Spock, BDR: recognised by their library;
/// their workers that apply nothing write no row of sno's).
pub fn applies_replication(library: &str, function: &str) -> bool {
    match library {
        "postgres" => matches!(
            function,
            "ApplyWorkerMain" | "TablesyncWorkerMain" | "ParallelApplyWorkerMain"
        ),
        "pglogical" | "spock" | "bdr" => true,
        _ => false,
    }
}

/// sno's own tables, in schema `sno_internal`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Internal {
    /// `reserved_grants`: the reserved partitions granted to sessions (`sno_generate_at`).
    ReservedGrants,
    /// `lease_partitions`: the lease pool's partitions.
    LeasePartitions,
    /// `leases`: the leases granted.
    Leases,
    /// `lease_ledger`: the registry's ledger.
    LeaseLedger,
}

impl Internal {
    /// The table of this name in `sno_internal`, if it is one of sno's.
    pub fn named(name: &str) -> Option<Internal> {
        Some(match name {
            "reserved_grants" => Internal::ReservedGrants,
            "lease_partitions" => Internal::LeasePartitions,
            "leases" => Internal::Leases,
            "lease_ledger" => Internal::LeaseLedger,
            _ => return None,
        })
    }

    /// Whether its rows name a reserved partition granted by the server that wrote them.
    fn names_a_grant(self) -> bool {
        matches!(self, Internal::ReservedGrants | Internal::LeasePartitions)
    }
}

/// A row change on one of sno's tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    Insert,
    Update,
    Delete,
}

/// What becomes of a row change on one of sno's tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// This server's own change (sno's functions, its registry, a restore): it happens.
    Apply,
    /// Another server's change, arrived by replication: dropped.
    Drop,
    /// Another server's grant, arrived by replication: dropped, and the partition it names noted
    /// in this server's lineage as granted, so that this server never grants it.
    DropNotingGrant,
}

/// What becomes of `change` on `table`, made by a process that `replicating` says applies
/// another server's changes.
pub fn arrival(table: Internal, change: Change, replicating: bool) -> Arrival {
    if !replicating {
        Arrival::Apply
    } else if change == Change::Insert && table.names_a_grant() {
        Arrival::DropNotingGrant
    } else {
        Arrival::Drop
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_replication_workers_are_replicating() {
        for f in [
            "ApplyWorkerMain",
            "TablesyncWorkerMain",
            "ParallelApplyWorkerMain",
        ] {
            assert!(applies_replication("postgres", f), "{f}");
        }
        for f in [
            "AutoVacLauncherMain",
            "ApplyLauncherMain",
            "ParallelWorkerMain",
            "",
        ] {
            assert!(!applies_replication("postgres", f), "{f}");
        }
        assert!(applies_replication("spock", "spock_apply_main"));
        assert!(applies_replication("pglogical", "pglogical_apply_main"));
        assert!(!applies_replication("sno", "ApplyWorkerMain"));
        assert!(!applies_replication("pg_cron", "CronLauncherMain"));
    }

    #[test]
    fn own_changes_apply_and_replicated_ones_are_dropped() {
        let tables = [
            Internal::ReservedGrants,
            Internal::LeasePartitions,
            Internal::Leases,
            Internal::LeaseLedger,
        ];
        for t in tables {
            for c in [Change::Insert, Change::Update, Change::Delete] {
                assert_eq!(arrival(t, c, false), Arrival::Apply);
                let want = if c == Change::Insert
                    && matches!(t, Internal::ReservedGrants | Internal::LeasePartitions)
                {
                    Arrival::DropNotingGrant
                } else {
                    Arrival::Drop
                };
                assert_eq!(arrival(t, c, true), want, "{t:?} {c:?}");
            }
        }
    }

    #[test]
    fn tables_by_name() {
        assert_eq!(
            Internal::named("reserved_grants"),
            Some(Internal::ReservedGrants)
        );
        assert_eq!(
            Internal::named("lease_partitions"),
            Some(Internal::LeasePartitions)
        );
        assert_eq!(Internal::named("leases"), Some(Internal::Leases));
        assert_eq!(Internal::named("lease_ledger"), Some(Internal::LeaseLedger));
        assert_eq!(Internal::named("events"), None);
        assert_eq!(Internal::named("Leases"), None);
    }
}
