//! The partition a server derives when `sno.partition` is not set: 16 bits of a mix of the
//! cluster's system identifier and the state file's random instance number, so that clusters
//! created independently, and copies of one, differ with high probability.
//!
//! Pure Rust, no PostgreSQL. The lineage derives it for its incarnation
//! ([`crate::generator::lineage::State::derived`]) and draws a new incarnation while it names a
//! partition another member of the lineage used, or a reserved one.

/// The partition of a server whose `sno.partition` is not set: 16 bits of a mix of the
/// cluster's system identifier (made by `initdb` from the time and a process ID) and the
/// state file's random instance number (new for every copy of a data directory), so that
/// independently created clusters, and copies of one, differ with high probability.
pub const fn derived_partition(sysid: u64, instance: u64) -> u16 {
    partition_from_system_identifier(sysid ^ mix(instance))
}

/// 16 bits of a mix of a system identifier. splitmix64's finalizer spreads every input bit
/// over the result.
pub const fn partition_from_system_identifier(sysid: u64) -> u16 {
    (mix(sysid) >> 48) as u16
}

const fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn derived_partitions_spread() {
        // System identifiers of clusters made a second apart differ in their top bits only.
        let base: u64 = 7_312_345_678 << 32;
        let parts: HashSet<u16> = (0..1000u64)
            .map(|i| partition_from_system_identifier(base + (i << 32) + (i * 4096)))
            .collect();
        assert!(parts.len() > 980, "{} distinct of 1000", parts.len());
        assert_eq!(
            partition_from_system_identifier(42),
            partition_from_system_identifier(42)
        );
    }

    /// The odds `doc/fleet.md` gives: n independent servers with derived partitions, each uniform
    /// over the 61,440 partitions below the reserved range (the lineage draws again on a
    /// reserved one), and the chance that two of them share one.
    #[test]
    fn derived_collision_odds_as_the_fleet_page_says() {
        let odds = |n: u32| {
            let free: f64 = (0..n).map(|i| 1.0 - f64::from(i) / 61_440.0).product();
            100.0 * (1.0 - free)
        };
        assert_eq!(format!("{:.2} %", odds(10)), "0.07 %");
        assert_eq!(format!("{:.1} %", odds(100)), "7.7 %");
        assert_eq!(format!("{:.2} %", odds(1000)), "99.97 %");
        // And the partitions drawn are spread over that range as a uniform draw would be: of
        // 20,000 clusters' first draws, about 18,750 fall below the reserved range and fill
        // about 61,440 * (1 - e^(-18750/61440)) = 16,170 distinct partitions.
        let mut seen = std::collections::HashSet::new();
        let mut x: u64 = 1;
        for _ in 0..20_000 {
            x = mix(x);
            let p = derived_partition(x, mix(x ^ 7));
            if p < 61_440 {
                seen.insert(p);
            }
        }
        assert!((15_800..16_500).contains(&seen.len()), "{}", seen.len());
    }
}
