# shellcheck shell=bash
# .ci/bench, section convert: python -m sno_pg.convert on a table with one child table, without
# and with concurrent writers, against the offline peer (convert.sql, convert_offline.sql,
# convert.py). Sourced by .ci/bench after common.sh.
CONV_ROWS="${SNO_BENCH_CONVERT_ROWS:-1000000}"
CONV_CHILD_ROWS="${SNO_BENCH_CONVERT_CHILD_ROWS:-$CONV_ROWS}"
CONV_CLIENTS="${SNO_BENCH_CONVERT_CLIENTS:-4}"
CONV_TPS="${SNO_BENCH_CONVERT_TPS:-400}"
for k in CONV_ROWS CONV_CHILD_ROWS CONV_CLIENTS CONV_TPS; do
    [[ "${!k}" =~ ^[1-9][0-9]*$ ]] || { echo "SNO_BENCH_${k/CONV_/CONVERT_}: a count above 0 ('${!k}')" >&2; exit 2; }
done
say "convert: $CONV_ROWS rows and a child table of $CONV_CHILD_ROWS, python -m sno_pg.convert against the offline rewrite, without and with $CONV_CLIENTS writers ($CONV_TPS statements/s)"
# psycopg 3 for the tool: the venv the client tests use (tests/client/adopt_convert.sh), made
# here too when missing, under the same lock (tests/client/lib.bash's drivers_venv).
venv="$(drivers_venv "$SNO_ROOT")"
SOCK="$SNO_WORK/bench-$V"
dpsql() { local db="$1"; shift; "$BIN/psql" -X -q -h "$SOCK" -p "$PORT" -U postgres -d "$db" -v ON_ERROR_STOP=1 "$@"; }

# The legacy data, once, in a template database that each run copies: a bigserial key in
# created_at order (as a table that was inserted into over a year), and a child with a NOT NULL,
# indexed foreign key to it, its rows referencing the parents in a scattered order.
t=$(date +%s)
psql -c "ALTER ROLE postgres SET sno.reserved_limit = 4096" -c "CREATE DATABASE conv_template"
dpsql conv_template -v rows="$CONV_ROWS" -v child_rows="$CONV_CHILD_ROWS" -f "$BENCH_D/convert.sql"
echo "    template: legacy $(dpsql conv_template -At -c "SELECT pg_size_pretty(pg_total_relation_size('legacy'))"), orders $(dpsql conv_template -At -c "SELECT pg_size_pretty(pg_total_relation_size('orders'))") ($(($(date +%s) - t)) s)"

# The writers: one statement a transaction, each script as likely, pgbench -R spreading them
# over time; in chunks of 5 s (a pgbench log is whole only once pgbench exits) until the stop
# file exists, each chunk's per-transaction log kept.
printf '%s\n' "INSERT INTO legacy (payload) VALUES ('writer');" >"$SCRATCH/w_ins.sql"
printf '%s\n' '\set id random(1, :rows)' "UPDATE legacy SET payload = 'updated' WHERE id = :id;" >"$SCRATCH/w_upd.sql"
printf '%s\n' '\set id random(1, :rows)' "INSERT INTO orders (legacy_id, amount) VALUES (:id, 1);" >"$SCRATCH/w_child.sql"
printf '%s\n' '\set id random(1, :rows)' "SELECT payload FROM legacy WHERE id = :id;" >"$SCRATCH/w_read.sql"
writers_start() {
    local tag="$1" db="$2"
    rm -f "$SCRATCH/$tag.stop" "$SCRATCH/$tag.failed"
    (
        i=0
        while [[ ! -e "$SCRATCH/$tag.stop" ]]; do
            i=$((i + 1))
            if ! "$BIN/pgbench" -n -c "$CONV_CLIENTS" -j 2 -R "$CONV_TPS" -T 5 -D rows="$CONV_ROWS" \
                -f "$SCRATCH/w_ins.sql" -f "$SCRATCH/w_upd.sql" -f "$SCRATCH/w_child.sql" -f "$SCRATCH/w_read.sql" \
                -l --log-prefix="$SCRATCH/wl-$tag-$i" -h "$SOCK" -p "$PORT" -U postgres "$db" >"$SCRATCH/wo-$tag-$i" 2>&1; then
                echo "$i" >"$SCRATCH/$tag.failed"
                break
            fi
        done
    ) &
    WRITERS=$!
}
writers_stop() {
    touch "$SCRATCH/$1.stop"
    wait "$WRITERS"
    if [[ -e "$SCRATCH/$1.failed" ]]; then
        cat "$SCRATCH/wo-$1-$(cat "$SCRATCH/$1.failed")" >&2
        echo "the writers failed ($1)" >&2
        exit 1
    fi
}

# conv_run KIND WRITERS: a fresh copy of the template; writers started 2 s before (WRITERS =
# writers); KIND: tool (python -m sno_pg.convert with its defaults), offline
# (convert_offline.sql), or none (10 s of writers alone); the same end state checked; one line to
# convert.txt: kind writers start end (ns) details.
conv_run() {
    local kind="$1" writers="$2" tag="$1-$2" db=conv_run t0 t1 detail="" out got
    out="$SCRATCH/conv-$tag.out"
    psql -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db" \
        -c "CREATE DATABASE $db TEMPLATE conv_template STRATEGY FILE_COPY"
    if [[ "$writers" == writers ]]; then
        writers_start "$tag" "$db"
        sleep 2
    fi
    t0=$(date +%s%N)
    case "$kind" in
    tool)
        PYTHONPATH="$SNO_ROOT/python" PYTHONDONTWRITEBYTECODE=1 "$venv/bin/python" -m sno_pg.convert \
            --dsn "host=$SOCK port=$PORT user=postgres dbname=$db" legacy --meta 1 --time-column created_at >"$out" 2>&1 ||
            { [[ "$writers" == writers ]] && touch "$SCRATCH/$tag.stop"; cat "$out" >&2; echo "sno_pg.convert failed ($tag)" >&2; exit 1; }
        grep -E 'converted by this run|rows to fill|rows filled in|waited|valid, built in|VALIDATE CONSTRAINT|NOT NULL in|converted in' "$out" |
            sed 's/^/      tool: /'
        # the longest any locking step held its locks, and the batches' rate
        detail="$(sed -n 's/.*: locks held \([0-9]*\) ms$/\1/p' "$out" | sort -n | tail -1) $(sed -n 's/.*step 4: .* (\([0-9]*\) rows\/s.*/\1/p' "$out" | tail -1)"
        ;;
    offline)
        dpsql "$db" -f "$BENCH_D/convert_offline.sql" >"$out" 2>&1 ||
            { [[ "$writers" == writers ]] && touch "$SCRATCH/$tag.stop"; cat "$out" >&2; echo "the offline conversion failed ($tag)" >&2; exit 1; }
        # the rewrite statement's time; each statement's, shown
        detail="$(awk '/^@ legacy: the rewrite/ { r = 1; next } r && /^Time: / { print $2; exit }' "$out")"
        awk '/^@ / { l = substr($0, 3); next } /^Time: / && l != "" { printf "      offline: %s: %s ms\n", l, $2; l = "" }' "$out"
        ;;
    none) sleep 10 ;;
    esac
    t1=$(date +%s%N)
    if [[ "$writers" == writers ]]; then
        sleep 1
        writers_stop "$tag"
    fi
    if [[ "$kind" != none ]]; then
        # The end state: sno_id the primary key; every row the table had (and every row writers
        # added before the new default) has a reserved-space ID of its created_at floored to 4 ms,
        # increasing with created_at; the child's new column is its parent's; both foreign keys
        # validated.
        got="$(dpsql "$db" -At -F ' ' -c "SELECT
            (SELECT a.attname FROM pg_constraint c JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
             WHERE c.conrelid = 'legacy'::regclass AND c.contype = 'p'),
            (SELECT count(*) FROM legacy WHERE id <= $CONV_ROWS AND sno_partition(sno_id) < 61440),
            (SELECT count(*) FROM legacy WHERE sno_partition(sno_id) >= 61440 AND sno_time(sno_id) <> sno_time(sno_min(created_at))),
            (SELECT count(*) FROM (SELECT sno_id < lag(sno_id) OVER (ORDER BY created_at, id) AS down FROM legacy
             WHERE id <= $CONV_ROWS) s WHERE down),
            (SELECT count(*) FROM orders o LEFT JOIN legacy l ON l.id = o.legacy_id WHERE o.legacy_sno_id IS DISTINCT FROM l.sno_id),
            (SELECT count(*) FROM pg_constraint WHERE conrelid = 'orders'::regclass AND contype = 'f' AND convalidated)")"
        # Order: in the runs with writers, a row a writer held locked when its batch passed is
        # done in a later pass of the tool (its ID then sorts after its unit's others): counted, not failed.
        read -r pk unconverted badtime down mismatched fks <<<"$got"
        if [[ "$pk $unconverted $badtime $mismatched $fks" != "sno_id 0 0 0 2" ]] || { [[ "$writers" != writers ]] && ((down)); }; then
            echo "the $kind conversion ($writers) left another state: primary key $pk, $unconverted old rows without a reserved ID," \
                "$badtime with another time, $down out of created_at order, $mismatched child rows not matching, $fks validated foreign keys" >&2
            exit 1
        fi
        detail+=" $down"
    fi
    echo "$kind $writers $t0 $t1 $detail" | tee -a "$SCRATCH/convert.txt" | sed 's/^/    run: /'
    psql -c "DROP DATABASE $db"
}

: >"$SCRATCH/convert.txt"
conv_run none writers
conv_run tool no
conv_run tool writers
conv_run offline no
conv_run offline writers
echo
echo "Converting a $CONV_ROWS-row table (bigserial key, created_at, payload; keys in created_at order) with one child" \
    "table of $CONV_CHILD_ROWS rows (NOT NULL indexed bigint foreign key) to a sno primary key: \`python -m sno_pg.convert" \
    "legacy --meta 1 --time-column created_at\` (its defaults: batches of 5,000 rows, --lock-timeout 2s) against the" \
    "offline peer, one transaction under ACCESS EXCLUSIVE (legacy rewritten by ALTER COLUMN sno_id TYPE sno USING" \
    "sno_generate_at(1, created_at)); one run each, a fresh copy of the same database each time, PostgreSQL" \
    "$(psql -At -c 'SHOW server_version'). Writers: pgbench, $CONV_CLIENTS clients, $CONV_TPS statements/s in all (-R)," \
    "one statement a transaction: INSERT into legacy, UPDATE of a legacy row, INSERT into the child, SELECT of a legacy" \
    "row by key, started 2 s before the conversion:"
echo
python3 "$BENCH_D/convert.py" "$SCRATCH" "$CONV_CLIENTS" "$CONV_TPS"
