#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=15 server=no cpu=0 estimate=95
# The monitoring files of doc/monitoring/ with the real tools (PostgreSQL 15 only): Debian 12's
# postgres_exporter 0.11.1 (/usr/bin/prometheus-postgres-exporter) runs with
# --extend.query-path doc/monitoring/queries.yaml against servers of its own, as the manual
# says: as the OS user prometheus, connected by DATA_SOURCE_NAME (host=the socket directory) as
# sno_exporter, made by the manual's statements (doc/monitoring.md, "monitoring:role"): no
# superuser, a member of pg_monitor only; with the exporter's default metrics and pg_settings
# metrics on (no --disable-* flag). The plan of every query of the files must cost less than
# jit_above_cost (every scrape runs them). Each exporter's /metrics is read with curl and compared
# with what the server's own sno_generator says, in each state:
#   p  a primary: two tables partitioned by their sno key, one with partitions three days ahead,
#      one with today's only: the sno_time_partitions_* series equal the view
#      sno_time_partitioned_tables, the alert's condition holds for the second only;
#      ready with its derived partition; IDs made move ids_issued by exactly their
#      number, and one sno_generate_at call (a session's first: a reserved partition granted)
#      moves sno_reserved_granted up by one and sno_reserved_remaining down by one; its clock
#      stepped back 10 s: regressions, flips and the tick-tock bit move; then sno.partition 9
#      (ALTER SYSTEM, reload): source explicit, partition 9; then partition leases of a role
#      lease_svc (granted EXECUTE on the three lease functions): one kept, one released, one with
#      a TTL of 3 s left unrenewed: past the midpoint between its renew_after and expires_at the
#      exporter shows it overdue (and SnoLeaseRenewalsFailing's condition holds), after its end
#      and a release then lapsed; the sno_leases_* and sno_lease_space_* series equal the views
#      sno_leases and sno_lease_space (reserved_left equals sno_reserved_remaining);
#   c  a pg_basebackup copy of p started beside it: sno_generate fails with SQLSTATE 55000, the
#      exporter shows status copy, ready 0, no partition, and sno_reserved_may_grant 0 with p's
#      grant counted; its lease series equal its views (p's leases, copied: the kept one
#      inherited);
#   s  a streaming standby of p: status standby, ready 0, no partition series (its view shows
#      the partition it will use once promoted, 9), p's sno_reserved counts, its lease series
#      equal its views (as on c);
#   a Citus 13.2.2 cluster, coordinator co and workers w1, w2 (tests/citus/citus.bash), the
#      role created on the coordinator only (Citus creates it, with its pg_monitor membership,
#      on w1 and on w2 added later): an exporter on co with doc/monitoring/queries-citus.yaml
#      (checked to hold queries.yaml verbatim) shows every node checked, ready, its partition,
#      one node per partition and its generations left; w1 and w2 given one explicit partition:
#      2 nodes on it; w2 stopped: checked 0 and no partition of it.
# Every metric name the rules of doc/monitoring/sno-alerts.yml read is taken from that file and
# must be exported in these states (so a rule naming a series no exporter produces fails here),
# and every doc/monitoring.md#anchor of the rules' annotations must be a heading of that page.
# Then a real Prometheus (Debian's 2.42) scrapes the four exporters with those rules: the alerts
# whose condition holds are exactly SnoGeneratorRefusing for c (not for the standby),
# SnoLeaseRenewalsFailing for p (its lapsed lease; not for c nor s, which grant no lease) and
# SnoCitusPartitionShared for w1 and w2, every rule evaluates without error, and every scrape
# ends within Prometheus's timeout (2 s). Last, no exporter logged an error.
#
# Ports: servers PORT+10..PORT+29 (Unix sockets only); the exporters and Prometheus listen on
# 127.0.0.1, each on the lowest odd port of PORT+30..PORT+49 no socket of this machine uses.
#
# Usage: monitoring_exporter.sh SOCKET_DIR PORT BINDIR (only PORT and BINDIR: own servers), with
# SNO_PG_MAJOR=15 (any other major: skipped).
set -euo pipefail

if [[ "${SNO_PG_MAJOR:-}" != 15 ]]; then
    echo "ok: skipped monitoring_exporter.sh: the exporter is tested on PostgreSQL 15 only (SNO_PG_MAJOR=${SNO_PG_MAJOR:-unset})"
    exit 0
fi
EXPORTER=/usr/bin/prometheus-postgres-exporter
PROMETHEUS=/usr/bin/prometheus
for b in "$EXPORTER" "$PROMETHEUS" /usr/bin/curl /usr/bin/python3; do
    [[ -x "$b" ]] || { echo "FAIL: $b is not installed (Debian: prometheus-postgres-exporter, prometheus, curl, python3)"; exit 1; }
done
/usr/bin/python3 -c 'import yaml' 2>/dev/null || { echo "FAIL: PyYAML is not installed (Debian: python3-yaml)"; exit 1; }
id prometheus >/dev/null 2>&1 || { echo "FAIL: no OS user prometheus (the Debian packages make it)"; exit 1; }

# shellcheck source=../citus/citus.bash
source "$(dirname "${BASH_SOURCE[0]}")/../citus/citus.bash"
pgc="$3/pg_config"
[[ -x "$pgc" ]] || pgc=/usr/lib/postgresql/15/bin/pg_config
citus_ensure "$pgc" || { echo "FAIL: Citus $CITUS_VERSION could not be installed"; exit 1; }
harness_setup monitoring_exporter "$3" $(($2 + 10)) $(($2 + 29))
T0=$SECONDS
PORT0=$2
MON="$SNO_ROOT/doc/monitoring"

# --- exporters and Prometheus ---------------------------------------------------------------------

declare -A EXP_PORT=()
BG_PIDS=()

# port_busy PORT: whether a TCP socket of this machine has PORT as its local port (not counting
# TIME_WAIT).
port_busy() {
    awk -v p="$(printf '%04X' "$1")" 'FNR > 1 { split($2, a, ":"); if (a[2] == p && $4 != "06") f = 1 } END { exit !f }' \
        /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# free_port: the lowest odd port of PORT+30..PORT+49 that is not busy nor given out (odd: Linux
# gives outgoing connections even local ports first).
TAKEN=()
free_port() {
    local p t
    for ((p = (PORT0 + 30) | 1; p <= PORT0 + 49; p += 2)); do
        for t in "${TAKEN[@]}"; do [[ "$t" == "$p" ]] && continue 2; done
        port_busy "$p" || { TAKEN+=("$p"); echo "$p"; return 0; }
    done
    die "no free port in $((PORT0 + 30))..$((PORT0 + 49))"
}

# bg_start LOG COMMAND...: COMMAND as the OS user prometheus in the background (its log, stdout
# and stderr, in LOG); its pid is added to BG_PIDS, stopped on exit.
bg_start() {
    local log="$1"
    shift
    # The log is opened by this shell (root), in the work directory; the process only writes it.
    # shellcheck disable=SC2024
    sudo -u prometheus "$@" >"$log" 2>&1 &
    BG_PIDS+=("$!")
}

# On exit: the exporters and Prometheus stopped (SIGTERM to sudo, which passes it on), then the
# harness's cleanup (the servers, the work directory).
# shellcheck disable=SC2317 # called by the EXIT trap
monitoring_cleanup() {
    local rc=$? p
    for p in "${BG_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${BG_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    # harness_cleanup reads the exit status from $? (and set -e must not end the trap here).
    set +e
    (exit "$rc")
    harness_cleanup
}
trap monitoring_cleanup EXIT

# http_wait URL: waits (10 s at most) until URL answers 200.
http_wait() {
    for _ in $(seq 100); do
        [[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$1" || true)" == 200 ]] && return 0
        sleep 0.1
    done
    return 1
}

# exporter_start NAME NODE QUERIES: a postgres_exporter for the database postgres of NODE as
# sno_exporter, with the queries file QUERIES (copied into the work directory, where the OS
# user prometheus can read it); its log is $CL_WORK/exporter_NAME/log.
exporter_start() {
    local name="$1" node="$2" d="$CL_WORK/exporter_$1" port
    mkdir "$d"
    cp "$3" "$d/queries.yaml"
    chmod -R a+rX "$d"
    port="$(free_port)"
    EXP_PORT[$name]=$port
    bg_start "$d/log" env DATA_SOURCE_NAME="host=$CL_WORK port=$(node_port "$node") user=sno_exporter dbname=postgres sslmode=disable" \
        "$EXPORTER" --web.listen-address="127.0.0.1:$port" --extend.query-path="$d/queries.yaml"
    http_wait "http://127.0.0.1:$port/metrics" || { cat "$d/log"; die "the exporter of $node did not start"; }
}

# scrape NAME: GET /metrics of exporter NAME into $CL_WORK/exporter_NAME/metrics (the file the
# m_* helpers read, per exporter: the last scrape).
scrape() {
    curl -sS -f --max-time 10 "http://127.0.0.1:${EXP_PORT[$1]}/metrics" >"$CL_WORK/exporter_$1/metrics" ||
        { tail -n 5 "$CL_WORK/exporter_$1/log"; die "GET /metrics of exporter $1"; }
}

# The exposition format, the rules and the alerts, read by one small Python program.
cat >"$CL_WORK/mon.py" <<'EOF'
import json, re, sys

def series(path):
    out = []
    for line in open(path, encoding="utf-8"):
        if line.startswith("#") or not line.strip():
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)', line)
        labels = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        out.append((m.group(1), labels, m.group(3)))
    return out

def num(v):
    f = float(v)
    return str(int(f)) if f == int(f) else repr(f)

def select(path, name, conds):
    want = dict(c.split("=", 1) for c in conds)
    # An empty label is no label, as in Prometheus.
    return [(l, v) for n, l, v in series(path) if n == name
            and all(l.get(k, "") == w for k, w in want.items())]

cmd = sys.argv[1]
if cmd == "value":      # FILE NAME [LABEL=VALUE...]: the values of the matching series
    for _, v in select(sys.argv[2], sys.argv[3], sys.argv[4:]):
        print(num(v))
elif cmd == "label":    # FILE NAME LABEL [LABEL=VALUE...]: that label of the matching series
    for l, _ in select(sys.argv[2], sys.argv[3], sys.argv[5:]):
        print(l.get(sys.argv[4], ""))
elif cmd == "names":    # FILE: every name of the scrape
    print("\n".join(sorted({n for n, _, _ in series(sys.argv[2])})))
elif cmd == "rule_names":   # RULES: every sno_/pg_ metric name the rules' expressions read
    import yaml
    names = set()
    for g in yaml.safe_load(open(sys.argv[2]))["groups"]:
        for r in g["rules"]:
            names |= set(re.findall(r"\b((?:sno|pg)_[a-z0-9_]+)\b", r["expr"]))
    print("\n".join(sorted(names)))
elif cmd == "rule_count":   # RULES
    import yaml
    print(sum(len(g["rules"]) for g in yaml.safe_load(open(sys.argv[2]))["groups"]))
elif cmd == "verbatim":     # PLAIN CITUS: the text of PLAIN is in CITUS, and its namespaces equal
    import yaml
    plain, citus = open(sys.argv[2]).read(), open(sys.argv[3]).read()
    a, b = yaml.safe_load(plain), yaml.safe_load(citus)
    print("yes" if plain in citus and all(b.get(k) == v for k, v in a.items()) else "no")
elif cmd == "alerts":       # JSON of /api/v1/alerts: "ALERTNAME server node" per alert, sorted
    alerts = json.load(sys.stdin)["data"]["alerts"]
    print("\n".join(sorted(" ".join([a["labels"]["alertname"], a["labels"].get("server", "-"),
                                     a["labels"].get("node", "-")]) for a in alerts)))
elif cmd == "anchors":      # RULES PAGE DOCS-DIR: the doc/monitoring.md#ANCHOR of the rules with no such heading
    sys.path.insert(0, sys.argv[4])
    import check
    heads = {a for _, _, a in check.blocks_and_headings(sys.argv[3])[0]}
    print("\n".join(sorted(set(re.findall(r"doc/monitoring\.md#([a-z0-9_-]+)", open(sys.argv[2]).read())) - heads)))
elif cmd == "namespaces":   # QUERIES: the namespaces of a queries file
    import yaml
    print("\n".join(yaml.safe_load(open(sys.argv[2]))))
elif cmd == "query_sql":    # QUERIES NAMESPACE: its query
    import yaml
    print(yaml.safe_load(open(sys.argv[2]))[sys.argv[3]]["query"])
elif cmd == "plan_cost":    # EXPLAIN (FORMAT JSON) output: the plan's total cost
    print(json.load(sys.stdin)[0]["Plan"]["Total Cost"])
elif cmd == "query":        # JSON of /api/v1/query: "LABELS VALUE" per sample of a vector, sorted
    print("\n".join(sorted(f"{r['metric'].get('instance', '')} {r['value'][1]}"
                           for r in json.load(sys.stdin)["data"]["result"])))
elif cmd == "rule_health":  # JSON of /api/v1/rules: "NAME HEALTH" of every rule evaluated
    groups = json.load(sys.stdin)["data"]["groups"]
    print("\n".join(sorted(f"{r['name']} {r['health']} {r.get('lastError', '')}".strip()
                           for g in groups for r in g["rules"])))
EOF
mon() { /usr/bin/python3 "$CL_WORK/mon.py" "$@"; }
# m_value EXPORTER NAME [LABEL=VALUE...]: the values of NAME's matching series in the last scrape.
m_value() { mon value "$CL_WORK/exporter_$1/metrics" "${@:2}"; }
# m_label EXPORTER NAME LABEL [LABEL=VALUE...]: the label LABEL of NAME's matching series.
m_label() { mon label "$CL_WORK/exporter_$1/metrics" "${@:2}"; }

# The rules' metric names, from the rules file itself.
RULE_NAMES="$(mon rule_names "$MON/sno-alerts.yml")"
[[ -n "$RULE_NAMES" ]] || die "no metric name found in the rules of $MON/sno-alerts.yml"
echo "    the rules read: $(echo "$RULE_NAMES" | xargs)"
check "queries-citus.yaml holds queries.yaml verbatim" "$(mon verbatim "$MON/queries.yaml" "$MON/queries-citus.yaml")" yes
# The manual's statements for the exporter's role, run as printed on p and on the coordinator.
ROLE_SQL="$(awk '$0 == "<!-- monitoring:role -->" { f = 1 } f && $0 == "```sql" { b = 1; next } b && $0 == "```" { exit } b' \
    "$SNO_ROOT/doc/monitoring.md")"
grep -q '^GRANT pg_monitor TO sno_exporter;$' <<<"$ROLE_SQL" || die "the manual's role statements were not found in doc/monitoring.md"
# Every link of the rules' annotations is a heading of the manual's page.
check "every doc/monitoring.md#anchor of the rules is a heading of doc/monitoring.md" \
    "$(mon anchors "$MON/sno-alerts.yml" "$SNO_ROOT/doc/monitoring.md" "$SNO_ROOT/tests/docs")" ""

# check_rule_names EXPORTER PATTERN: every metric name of the rules matching PATTERN (grep -E) is
# in the exporter's last scrape.
check_rule_names() {
    local n names
    names="$(mon names "$CL_WORK/exporter_$1/metrics")"
    while read -r n; do
        check "exporter $1 exports $n, which the rules read" "$(grep -cx "$n" <<<"$names")" 1
    done < <(grep -E "$2" <<<"$RULE_NAMES")
}

# check_health EXPORTER: the exporter read its queries file and every query ran.
check_health() {
    check "exporter $1: the queries file loaded (pg_exporter_user_queries_load_error)" \
        "$(m_value "$1" pg_exporter_user_queries_load_error)" 0
    check "exporter $1: connected (pg_up)" "$(m_value "$1" pg_up)" 1
    check "exporter $1: no query failed (pg_exporter_last_scrape_error)" "$(m_value "$1" pg_exporter_last_scrape_error)" 0
}

# The generator's counters and gauges: each sno_generator_* metric against its column, read
# right after the scrape (nothing makes IDs in between).
# (active_backends and state_writes are left out: a backend that made IDs disconnects, and the
# background worker writes the state file, on their own time.)
GEN_COLUMNS="ids_issued units_opened full_unit_stalls regressions flips clock_waits clock_wait_failures state_write_failures tick ids_per_unit"
check_generator() {
    local node="$2" c metric want
    for c in $GEN_COLUMNS; do
        metric="sno_generator_$c"
        [[ "$c" =~ ^(tick|ids_per_unit)$ ]] || metric+=_total
        want="$(node_sql "$node" "SELECT $c FROM sno_generator")"
        check "exporter $1: $metric is $node's sno_generator.$c ($want)" "$(m_value "$1" "$metric")" "$want"
    done
}

# check_status EXPORTER NODE STATUS READY: the exporter's sno_status and sno_partition, and the
# node's own view.
check_status() {
    local p
    check "$2: sno_generator.status" "$(node_sql "$2" "SELECT status FROM sno_generator")" "$3"
    check "exporter $1: one sno_status_ready series, status $3, value $4" \
        "$(m_value "$1" sno_status_ready | xargs)|$(m_label "$1" sno_status_ready status)" "$4|$3"
    p="$(node_sql "$2" "SELECT sno_current_partition() FROM sno_generator WHERE status = 'ready'")"
    check "exporter $1: sno_partition_partition is sno_current_partition() of a ready server (${p:-none}: no series)" \
        "$(m_value "$1" sno_partition_partition | xargs)" "$p"
}

# check_reserved EXPORTER NODE MAY_GRANT: each sno_reserved_* series against the node's view
# sno_reserved, and may_grant as expected.
check_reserved() {
    local want
    want="$(node_sql "$2" "SELECT concat_ws(' ', total, granted, used_by_live, remaining, may_grant::int) FROM sno_reserved")"
    check "exporter $1: sno_reserved_{partitions,granted,used_by_live,remaining,may_grant} are $2's sno_reserved ($want)" \
        "$(m_value "$1" sno_reserved_partitions) $(m_value "$1" sno_reserved_granted) $(m_value "$1" sno_reserved_used_by_live) $(m_value "$1" sno_reserved_remaining) $(m_value "$1" sno_reserved_may_grant)" \
        "$want"
    check "exporter $1: sno_reserved_may_grant is $3" "$(m_value "$1" sno_reserved_may_grant)" "$3"
}

# The lease counts of role lease_svc, from the view sno_leases, as the exporter's sno_leases
# namespace defines them: active, overdue, inherited, released, lapsed.
LEASE_COUNTS="SELECT concat_ws(' ', count(*) FILTER (WHERE state = 'active'),
       count(*) FILTER (WHERE state = 'active' AND now() > renew_after + (expires_at - renew_after) / 2),
       count(*) FILTER (WHERE state = 'inherited'), count(*) FILTER (WHERE state = 'released'),
       count(*) FILTER (WHERE state IN ('expired', 'ended') AND expires_at > now() - interval '10 minutes'
                          AND (released_at IS NULL OR released_at >= expires_at)))
    FROM sno_leases WHERE grantee = 'lease_svc'"

# check_leases EXPORTER NODE [WANT]: the sno_leases_* series of lease_svc against the node's
# view sno_leases (read right after the scrape), and WANT if given.
check_leases() {
    local got want m
    got="$(for m in active overdue inherited released lapsed; do m_value "$1" "sno_leases_$m" grantee=lease_svc; done | xargs)"
    want="$(node_sql "$2" "$LEASE_COUNTS")"
    check "exporter $1: sno_leases_{active,overdue,inherited,released,lapsed} of lease_svc are $2's sno_leases ($want)" \
        "$got" "$want"
    [[ -z "${3:-}" ]] || check "exporter $1: lease_svc's leases active, overdue, inherited, released, lapsed: $3" "$got" "$3"
}

# check_lease_space EXPORTER NODE: each sno_lease_space_* series against the node's view
# sno_lease_space, and reserved_left against sno_reserved_remaining.
check_lease_space() {
    local got want m
    got="$(for m in share share_left reserved_left pool_partitions active_leases; do m_value "$1" "sno_lease_space_$m"; done | xargs)"
    # None where the view's share_left is NULL (a standby, a Citus worker: they grant none).
    want="$(node_sql "$2" "SELECT CASE WHEN share_left IS NOT NULL THEN concat_ws(' ', share, share_left, reserved_left, pool_partitions, active_leases) END FROM sno_lease_space")"
    check "exporter $1: sno_lease_space_{share,share_left,reserved_left,pool_partitions,active_leases} are $2's sno_lease_space (${want:-none: it grants no lease})" \
        "$got" "$want"
    [[ -z "$want" ]] || check "exporter $1: sno_lease_space_reserved_left is sno_reserved_remaining" \
        "$(m_value "$1" sno_lease_space_reserved_left)" "$(m_value "$1" sno_reserved_remaining)"
}

# renewals_failing EXPORTER: the grantees for which SnoLeaseRenewalsFailing's condition holds
# in the last scrape (sno_leases_overdue + sno_leases_lapsed > 0, on a server that may grant).
renewals_failing() {
    local g
    [[ "$(m_value "$1" sno_reserved_may_grant)" == 0 ]] && return 0
    for g in $(m_label "$1" sno_leases_overdue grantee | sort -u); do
        (($(m_value "$1" sno_leases_overdue "grantee=$g") + $(m_value "$1" sno_leases_lapsed "grantee=$g") > 0)) && echo "$g"
    done
    return 0
}

# check_costs NODE QUERIES: every query of the file, planned on NODE, costs less than
# jit_above_cost: each scrape runs them all, and JIT compilation took 20 to 130 ms a query here.
check_costs() {
    local ns cost limit
    limit="$(node_sql "$1" "SHOW jit_above_cost")"
    for ns in $(mon namespaces "$2"); do
        cost="$(node_psql "$1" -c "EXPLAIN (FORMAT JSON) $(mon query_sql "$2" "$ns")" | mon plan_cost)"
        check "$1: the plan of $ns costs less than jit_above_cost ($limit): $cost" \
            "$(awk -v c="$cost" -v l="$limit" 'BEGIN { print (c < l) }')" 1
    done
}

# gen NODE N: N IDs made by NODE (as postgres).
gen() { node_sql "$1" "SELECT count(sno_generate(1)) FROM generate_series(1, $2)" >/dev/null; }

# --- p: a primary ------------------------------------------------------------------------------------

echo "--- $((SECONDS - T0)) s: p: a primary, its exporter as sno_exporter (pg_monitor only)"
node_init p
node_cmdline p shared_preload_libraries=sno
node_start p
node_sql p "CREATE EXTENSION sno" >/dev/null
node_psql p -f - <<<"$ROLE_SQL" >/dev/null
check "sno_exporter: no superuser, a member of pg_monitor only" \
    "$(node_sql p "SELECT r.rolsuper, string_agg(g.rolname, ',') FROM pg_roles r
                   JOIN pg_auth_members m ON m.member = r.oid JOIN pg_roles g ON g.oid = m.roleid
                   WHERE r.rolname = 'sno_exporter' GROUP BY r.rolsuper")" "f|pg_monitor"
# Two tables partitioned by their sno key: tp_ok with partitions for today and three days
# ahead, tp_short with today's only (the next day's missing: the alert's condition).
node_sql p "CREATE TABLE tp_ok (id sno PRIMARY KEY DEFAULT sno_generate(1)) PARTITION BY RANGE (id)" \
    "CREATE TABLE tp_short (id sno PRIMARY KEY DEFAULT sno_generate(1)) PARTITION BY RANGE (id)" \
    "SET timezone = 'UTC'" \
    "SELECT sno_create_time_partitions('tp_ok', '1 day', now() + interval '3 days')" \
    "SELECT sno_create_time_partitions('tp_short', '1 day', date_trunc('day', now()) + interval '1 day')" >/dev/null
exporter_start p p "$MON/queries.yaml"
gen p 10
scrape p
check_health p
check_status p p ready 1
check "exporter p: source derived" "$(m_label p sno_partition_partition source)" derived
check "exporter p: server label is the DSN's host:port" "$(m_label p sno_status_ready server)" "$CL_WORK:$(node_port p)"
check_rule_names p '^(sno_status|sno_partition|sno_generator|sno_reserved|sno_time_partitions|pg)_'
for t in tp_ok tp_short; do
    want="$(node_sql p "SELECT extract(epoch FROM newest_to - newest_from)::int || ' ' || partitions || ' 0 '
                        || extract(epoch FROM covered_until - now())::int FROM sno_time_partitioned_tables WHERE parent_table = '$t'::regclass")"
    got="$(m_value p sno_time_partitions_period_seconds "table=$t") $(m_value p sno_time_partitions_partitions "table=$t") $(m_value p sno_time_partitions_has_default "table=$t") $(m_value p sno_time_partitions_ahead_seconds "table=$t")"
    check "exporter p: sno_time_partitions_{period_seconds,partitions,has_default,ahead_seconds} of $t are its row of sno_time_partitioned_tables ($want, ahead within 30 s)" \
        "$(awk -v g="$got" -v w="$want" 'BEGIN { split(g, x, " "); split(w, y, " ");
            d = x[4] - y[4]; print (x[1] == y[1] && x[2] == y[2] && x[3] == y[3] && d > -30 && d < 30) ? "yes" : g }')" yes
done
check "exporter p: the alert's condition (ahead < period) holds for tp_short only" \
    "$(for t in tp_ok tp_short; do
           ahead="$(m_value p sno_time_partitions_ahead_seconds "table=$t")" per="$(m_value p sno_time_partitions_period_seconds "table=$t")"
           awk -v a="$ahead" -v p="$per" -v t="$t" 'BEGIN { if (a < p) print t }'
       done)" tp_short
# Dropped before Prometheus evaluates the rules (its alert would be pending there, and this test
# wants the alerts of the other states only); SnoTimePartitionMissing is tested by promtool.
node_sql p "DROP TABLE tp_short" >/dev/null
check_costs p "$MON/queries.yaml"
check_generator p p
check_reserved p p 1
before="$(m_value p sno_generator_ids_issued_total)"
granted="$(m_value p sno_reserved_granted)"
remaining="$(m_value p sno_reserved_remaining)"
gen p 1000
# A session's first sno_generate_at: a reserved partition granted to it.
check "p: sno_generate_at made an ID with a reserved partition" \
    "$(node_sql p "SELECT sno_partition(sno_generate_at(1, now() - interval '1 day')) >= 61440")" t
scrape p
check "exporter p: ids_issued moved by the 1000 IDs made" "$(($(m_value p sno_generator_ids_issued_total) - before))" 1000
check "exporter p: sno_reserved_granted up by one, sno_reserved_remaining down by one (the grant)" \
    "$(($(m_value p sno_reserved_granted) - granted)) $((remaining - $(m_value p sno_reserved_remaining)))" "1 1"
check_reserved p p 1
check "exporter p: the last ID is less than a minute old (high_water_age_seconds)" \
    "$(m_value p sno_generator_high_water_age_seconds | awk '{ print ($1 >= 0 && $1 < 60) }')" 1
check "exporter p: the horizon is ahead of the clock (horizon_ahead_seconds)" \
    "$(m_value p sno_generator_horizon_ahead_seconds | awk '{ print ($1 > 0) }')" 1

echo "--- $((SECONDS - T0)) s: p: its clock stepped back 10 s"
tick="$(m_value p sno_generator_tick)"
regressions="$(m_value p sno_generator_regressions_total)"
flips="$(m_value p sno_generator_flips_total)"
node_clock p -10s
gen p 10
scrape p
check "exporter p: regressions_total moved by one" "$(($(m_value p sno_generator_regressions_total) - regressions))" 1
check "exporter p: flips_total moved by one" "$(($(m_value p sno_generator_flips_total) - flips))" 1
check "exporter p: the tick-tock bit changed" "$(m_value p sno_generator_tick)" "$((1 - tick))"
check_generator p p

echo "--- $((SECONDS - T0)) s: p: sno.partition 9"
node_alter p sno.partition 9
node_reload p sno.partition 9
gen p 10
scrape p
check_status p p ready 1
check "exporter p: source explicit, partition 9" \
    "$(m_label p sno_partition_partition source)|$(m_value p sno_partition_partition)" "explicit|9"

echo "--- $((SECONDS - T0)) s: p: partition leases of lease_svc, one of 3 s left unrenewed"
node_sql p "CREATE ROLE lease_svc LOGIN" \
    "GRANT EXECUTE ON FUNCTION sno_lease_acquire(text, interval, int4), sno_lease_renew(int8, uuid, interval), sno_lease_release(int8, uuid) TO lease_svc" >/dev/null
# lease_sql SQL...: each SQL a statement of its own,
# as lease_svc.
lease_sql() { node_sql p "SET ROLE lease_svc" "$@"; }
lease_sql "SELECT lease FROM sno_lease_acquire(holder => 'svc-kept', ttl => '10 min', sequences => 8)" >/dev/null
read -r rl rt <<<"$(lease_sql "SELECT lease || ' ' || token FROM sno_lease_acquire(holder => 'svc-released', ttl => '10 min', sequences => 8)")"
lease_sql "SELECT sno_lease_release(lease => $rl, token => '$rt')" >/dev/null
read -r ll lt <<<"$(lease_sql "SELECT lease || ' ' || token FROM sno_lease_acquire(holder => 'svc-late', ttl => '3 s', sequences => 8)")"
# Past the midpoint between its renew_after (1 s in) and expires_at (3 s in), not renewed.
sleep "$(node_sql p "SELECT greatest(extract(epoch FROM renew_after + (expires_at - renew_after) / 2 - now()), 0) + 0.2
                     FROM sno_leases WHERE lease = $ll")"
scrape p
check "p: svc-late is active, past its midpoint and before its end" \
    "$(node_sql p "SELECT state, now() > renew_after + (expires_at - renew_after) / 2, now() < expires_at FROM sno_leases WHERE lease = $ll")" \
    "active|t|t"
check_leases p p "2 1 0 1 0"
check "exporter p: SnoLeaseRenewalsFailing's condition holds for lease_svc (its overdue lease)" "$(renewals_failing p)" lease_svc
check_rule_names p '^sno_lease'
# Past its end, then released (as a client does once its renewal is refused): lapsed.
sleep "$(node_sql p "SELECT greatest(extract(epoch FROM expires_at - now()), 0) + 0.1 FROM sno_leases WHERE lease = $ll")"
lease_sql "SELECT sno_lease_release(lease => $ll, token => '$lt')" >/dev/null
scrape p
check_leases p p "1 0 0 1 1"
check "exporter p: SnoLeaseRenewalsFailing's condition holds for lease_svc (its lapsed lease)" "$(renewals_failing p)" lease_svc
check_lease_space p p
check "exporter p: share 1 (timeline 1), one pool partition, one active lease" \
    "$(m_value p sno_lease_space_share) $(m_value p sno_lease_space_pool_partitions) $(m_value p sno_lease_space_active_leases)" "1 1 1"

# --- c: a copy of p, refused --------------------------------------------------------------------------

echo "--- $((SECONDS - T0)) s: c: a pg_basebackup copy of p started beside it"
node_basebackup p c
node_cmdline c shared_preload_libraries=sno
node_start c
check "c: sno_generate fails with SQLSTATE 55000" \
    "$(node_psql c -v VERBOSITY=verbose -c "SELECT sno_generate(1)" 2>&1 | grep -c '^ERROR:  55000: ' || true)" 1
exporter_start c c "$MON/queries.yaml"
scrape c
check_health c
check_status c c copy 0
check_reserved c c 0
check "exporter c: the copy counts p's grants" "$(m_value c sno_reserved_granted)" "$(m_value p sno_reserved_granted)"
check_leases c c "0 0 2 0 1"
check_lease_space c c
check "exporter c: SnoLeaseRenewalsFailing's condition is left out on the copy (it grants no lease)" "$(renewals_failing c)" ""
check "c: status_message says why" \
    "$(node_sql c "SELECT status_message LIKE 'this server is a copy of one that made IDs with partition 9%' FROM sno_generator")" t

# --- s: a standby of p ----------------------------------------------------------------------------------

echo "--- $((SECONDS - T0)) s: s: a streaming standby of p"
node_basebackup p s standby
node_cmdline s shared_preload_libraries=sno
node_start s
node_wait_catchup s p
exporter_start s s "$MON/queries.yaml"
scrape s
check_health s
check_status s s standby 0
check_reserved s s 0
check "exporter s: the standby counts p's grants" "$(m_value s sno_reserved_granted)" "$(m_value p sno_reserved_granted)"
check_leases s s "0 0 2 0 1"
check_lease_space s s
check "exporter s: SnoLeaseRenewalsFailing's condition is left out on the standby" "$(renewals_failing s)" ""
check "s: the view shows the partition the standby will use once promoted" \
    "$(node_sql s "SELECT partition, partition_source FROM sno_generator")" "9|sno.partition"

# --- a Citus cluster ----------------------------------------------------------------------------------

echo "--- $((SECONDS - T0)) s: Citus: coordinator co, workers w1 and w2; the role made on co only"
for n in co w1 w2; do
    citus_node_init "$n"
    citus_start "$n"
done
for n in co w1 w2; do node_sql "$n" "CREATE EXTENSION citus" >/dev/null; done
citus_coordinator co
node_sql co "CREATE EXTENSION sno" >/dev/null
citus_add_node w1 >/dev/null
node_psql co -f - <<<"$ROLE_SQL" >/dev/null
citus_add_node w2 >/dev/null
for n in w1 w2; do
    check "$n: Citus made sno_exporter, a member of pg_monitor" \
        "$(node_sql "$n" "SELECT pg_has_role('sno_exporter', 'pg_monitor', 'MEMBER')")" t
done
# Each node's first ID reads its Citus group.
for n in co w1 w2; do gen "$n" 1; done
exporter_start co co "$MON/queries-citus.yaml"
scrape co
check_health co
check_status co co ready 1
check_rule_names co '^sno_citus_'
check_costs co "$MON/queries-citus.yaml"

# check_nodes: for each running node, the coordinator's series against the node's own view.
node_label() { echo "$CL_WORK:$(node_port "$1")"; }
check_nodes() {
    local n l row
    for n in co w1 w2; do
        l="node=$(node_label "$n")"
        node_running "$n" || continue
        row="$(node_sql "$n" "SELECT status, CASE WHEN status = 'ready' THEN 1 ELSE 0 END, partition, citus_generations_left FROM sno_generator")"
        check "exporter co: $n checked, its status, ready, partition, generations left" \
            "$(m_value co sno_citus_node_checked "$l")|$(m_label co sno_citus_node_ready status "$l")|$(m_value co sno_citus_node_ready "$l")|$(m_value co sno_citus_partition_partition "$l")|$(m_value co sno_citus_generations_left "$l")" \
            "1|$row"
    done
}
check_nodes
for n in co w1 w2; do
    check "exporter co: $n's partition is its group's, on no other node" \
        "$(m_value co sno_citus_partition_partition "node=$(node_label "$n")")|$(m_value co sno_citus_partition_nodes "node=$(node_label "$n")")" \
        "$(citus_group "$n")|1"
done

echo "--- $((SECONDS - T0)) s: Citus: w1 and w2 both given sno.partition 4095"
for n in w1 w2; do
    node_alter "$n" sno.partition 4095
    node_reload "$n" sno.partition 4095
done
scrape co
check_nodes
for n in w1 w2; do
    check "exporter co: $n shares partition 4095 with one other node" \
        "$(m_value co sno_citus_partition_partition "node=$(node_label "$n")")|$(m_value co sno_citus_partition_nodes "node=$(node_label "$n")")" \
        "4095|2"
done

# --- Prometheus with the rules ---------------------------------------------------------------------

echo "--- $((SECONDS - T0)) s: Prometheus: the four exporters, the rules of doc/monitoring/sno-alerts.yml"
pd="$CL_WORK/prometheus"
mkdir "$pd"
cp "$MON/sno-alerts.yml" "$pd/"
{
    echo "global: {scrape_interval: 2s, scrape_timeout: 2s, evaluation_interval: 1s}"
    echo "rule_files: [sno-alerts.yml]"
    echo "scrape_configs:"
    echo "  - job_name: postgres"
    echo "    static_configs:"
    echo "      - targets: ['127.0.0.1:${EXP_PORT[p]}', '127.0.0.1:${EXP_PORT[c]}', '127.0.0.1:${EXP_PORT[s]}', '127.0.0.1:${EXP_PORT[co]}']"
} >"$pd/prometheus.yml"
chown -R prometheus: "$pd"
PROM_PORT="$(free_port)"
bg_start "$pd/log" "$PROMETHEUS" --config.file="$pd/prometheus.yml" --storage.tsdb.path="$pd/data" \
    --web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn
http_wait "http://127.0.0.1:$PROM_PORT/-/ready" || { cat "$pd/log"; die "Prometheus did not start"; }
want_alerts="SnoCitusPartitionShared $(node_label co) $(node_label w1)
SnoCitusPartitionShared $(node_label co) $(node_label w2)
SnoGeneratorRefusing $(node_label c) -
SnoLeaseRenewalsFailing $(node_label p) -"
# prom_get PATH: GET PATH of the Prometheus API.
prom_get() { curl -sf --max-time 2 "http://127.0.0.1:$PROM_PORT/api/v1/$1" || true; }
# Until every exporter was scraped (a series up for each) and the rules evaluated after that.
got="" up=""
t1=$SECONDS
while ((SECONDS - t1 < 30)); do
    up="$(prom_get 'query?query=up' | mon query 2>/dev/null | awk '{ print $2 }' | xargs || true)"
    got="$(prom_get alerts | mon alerts 2>/dev/null || true)"
    [[ "$got" == "$want_alerts" && "$up" == "1 1 1 1" ]] && break
    sleep 0.5
done
# Two more evaluations, after every target's first scrape: no other alert comes.
sleep 2
got="$(prom_get alerts | mon alerts 2>/dev/null || true)"
check "Prometheus: the alerts whose condition holds: the copy refusing, p's lapsed lease, w1 and w2 sharing a partition" "$got" "$want_alerts"
check "Prometheus: every exporter scraped within the 2 s timeout (up)" "$up" "1 1 1 1"
[[ "$got" == "$want_alerts" ]] || { echo "  Prometheus's targets:"; prom_get targets | head -c 3000; echo; }
health="$(prom_get rules | mon rule_health)"
check "Prometheus: every rule evaluates without error" "$(grep -vc ' ok$' <<<"$health" || true)|$(wc -l <<<"$health")" \
    "0|$(mon rule_count "$MON/sno-alerts.yml")"
grep -v ' ok$' <<<"$health" || true

echo "--- $((SECONDS - T0)) s: Citus: w2 stopped"
node_stop w2
scrape co
check "exporter co: w2 not checked, no status, not ready" \
    "$(m_value co sno_citus_node_checked "node=$(node_label w2)")|$(m_label co sno_citus_node_ready status "node=$(node_label w2)")|$(m_value co sno_citus_node_ready "node=$(node_label w2)")" "0||0"
check "exporter co: no partition nor generations of w2" \
    "$(m_value co sno_citus_partition_partition "node=$(node_label w2)")$(m_value co sno_citus_generations_left "node=$(node_label w2)")" ""
check "exporter co: w1 alone on partition 4095 again" "$(m_value co sno_citus_partition_nodes "node=$(node_label w1)")" 1
check "exporter co: its other queries still ran (pg_exporter_last_scrape_error)" "$(m_value co pg_exporter_last_scrape_error)" 0

# --- the exporters' logs ------------------------------------------------------------------------------

for n in p c s co; do
    errs="$(grep -E 'level=(error|warn)|err=' "$CL_WORK/exporter_$n/log" || true)"
    check "exporter $n logged no error" "$errs" ""
done
echo "    $((SECONDS - T0)) s"
exit "$fail"
