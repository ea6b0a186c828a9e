#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=15 server=yes cpu=0 estimate=15
# sno's errors in databases whose encoding is not UTF-8: EUC_JP, LATIN1 and SQL_ASCII (made from
# template0 with LC_COLLATE and LC_CTYPE 'C'). A client in UTF-8 sends bad IDs holding
# characters valid in the database's encoding (é, あ, ß, control characters, a value long enough
# to be cut), through sno's input, the (sno, text) operators and COPY. Each must fail with
# SQLSTATE 22P02 and a message naming the value in ASCII (printable ASCII as is, other bytes of
# the database's encoding as \xNN: é is "\x8f\xab\xb1" in EUC_JP, "\xe9" in LATIN1, "\xc3\xa9"
# in SQL_ASCII), not with 22021 (invalid byte sequence) as before 0.4.1; and the server log
# must have gained no byte sequence invalid in the database's encoding (no error about one, no
# U+FFFD, sno's lines all ASCII). In the UTF-8 database the value is shown as typed.
#
# PostgreSQL 15 only (the messages do not depend on the major). About 2 s.
#
# Usage: encodings.sh SOCKET_DIR PORT BINDIR   (run by .ci/test against a live cluster; the
# server log is found through the postmaster's standard error, so the cluster must log to a file,
# as pg_ctl -l does, and this script must be able to read /proc of the server: run as root)
set -euo pipefail
if [[ -n "${SNO_PG_MAJOR:-}" && "$SNO_PG_MAJOR" != 15 ]]; then
    echo "ok: skipped encodings.sh: it runs on PostgreSQL 15 only (SNO_PG_MAJOR=$SNO_PG_MAJOR)"
    exit 0
fi
host="$1" port="$2" bindir="$3"
export PGHOST="$host" PGPORT="$port" PGUSER=postgres PGCLIENTENCODING=UTF8 PGOPTIONS='-c client_min_messages=warning'
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
export LC_ALL=C
psql() { "$bindir/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }

dbs=(sno_enc_euc_jp sno_enc_latin1 sno_enc_sql_ascii sno_enc_utf8)
drop_dbs() {
    local db
    for db in "${dbs[@]}"; do psql -d postgres -c "DROP DATABASE IF EXISTS $db" 2>/dev/null || true; done
}
trap drop_dbs EXIT

# The server log: the file the postmaster's standard error goes to (the postmaster, not a
# backend: a backend's /proc entry goes away as soon as its psql exits, which raced this read).
pid="$(head -n 1 "$(psql -d postgres -Atc "SHOW data_directory")/postmaster.pid" 2>/dev/null || true)"
log="$(readlink -f "/proc/${pid:-0}/fd/2" 2>/dev/null || true)"
[[ -f "$log" && -r "$log" ]] || die "cannot find the server log (standard error of postmaster ${pid:-?} is '${log:-unreadable}': start the server with pg_ctl -l, run this as root)"
offset="$(stat -c %s "$log")"

for db in "${dbs[@]}"; do
    enc="${db#sno_enc_}"
    enc="${enc^^}"
    psql -d postgres -c "DROP DATABASE IF EXISTS $db" \
        -c "CREATE DATABASE $db TEMPLATE template0 ENCODING '$enc' LC_COLLATE 'C' LC_CTYPE 'C'"
    psql -d "$db" -c "CREATE EXTENSION sno" -c "CREATE TABLE t (id sno)"
    check "$db: server encoding" "$(psql -d "$db" -Atc "SHOW server_encoding")" "$enc"
done

# err DB SQL [STDIN]: the ERROR and DETAIL lines psql prints for SQL (with its SQLSTATE),
# newline-separated; STDIN feeds COPY.
err() {
    "$bindir/psql" -X -q -v VERBOSITY=verbose -d "$1" -c "$2" <<<"${3:-}" 2>&1 >/dev/null |
        grep -E '^(ERROR|DETAIL):' || true
}

# expect_quoted DB SQL QUOTED DETAIL [STDIN]: SQL fails with 22P02, the message names the
# value as QUOTED, with DETAIL.
n_expected=0
expect_quoted() {
    local got want
    got="$(err "$1" "$2" "${5:-}")"
    want="ERROR:  22P02: invalid input syntax for type sno: $3
DETAIL:  $4"
    check "$1: $2${5:+ <<< $5}" "$got" "$want"
    n_expected=$((n_expected + 1))
}

# expect DB SQL SHOWN DETAIL [STDIN]: expect_quoted with SHOWN between double quotes.
expect() { expect_quoted "$1" "$2" "\"$3\"" "$4" "${5:-}"; }

# long DB CHAR SHOWN: 50 times CHAR (over 40 bytes in every encoding), shown as SHOWN: the
# message shows the value's first 40 bytes and its length.
long() {
    local bytes=$(($(printf '%s' "$3" | grep -o '\\x' | wc -l) * 50))
    local shown=""
    while ((${#shown} < 160)); do shown+="$3"; done
    expect_quoted "$1" "SELECT repeat('$2', 50)::sno" "\"${shown:0:160}...\" ($bytes bytes)" \
        "A sno ID is exactly 16 characters from 2-9, a-x; the input has $bytes bytes."
}

for db in "${dbs[@]::3}"; do
    # é as the database holds it, its first byte, and its length in bytes; a second character
    # of the encoding.
    case "$db" in
    sno_enc_euc_jp) e='\x8f\xab\xb1' first=8f n=3 c2='あ' e2='\xa4\xa2' ;;
    sno_enc_latin1) e='\xe9' first=e9 n=1 c2='ß' e2='\xdf' ;;
    sno_enc_sql_ascii) e='\xc3\xa9' first=c3 n=2 c2='あ' e2='\xe3\x81\x82' ;;
    esac
    pad="$(printf '2%.0s' $(seq $((16 - 8 - n))))"
    expect "$db" "SELECT 'é'::sno" "$e" "A sno ID is exactly 16 characters from 2-9, a-x; the input has $n bytes."
    expect "$db" "SELECT '$c2'::sno" "$e2" \
        "A sno ID is exactly 16 characters from 2-9, a-x; the input has $(($(printf '%s' "$e2" | grep -o '\\x' | wc -l))) bytes."
    # 16 bytes: the DETAIL names the first byte that is not a digit.
    expect "$db" "SELECT '22222222é$pad'::sno" "22222222$e$pad" "Byte 0x$first at position 9 is not one of 2-9, a-x."
    expect "$db" "SELECT E'2222222\\t22222222'::sno" '2222222\x0922222222' "Byte 0x09 at position 8 is not one of 2-9, a-x."
    long "$db" 'é' "$e"
    # The (sno, text) operators and COPY read text the same way.
    expect "$db" "SELECT sno '2222222222222222' = 'é'::text" "$e" \
        "A sno ID is exactly 16 characters from 2-9, a-x; the input has $n bytes."
    expect "$db" "COPY t FROM STDIN" "x$e" \
        "A sno ID is exactly 16 characters from 2-9, a-x; the input has $((n + 1)) bytes." "xé"
    # Still an ID when it is one.
    check "$db: a valid ID still reads" \
        "$(psql -d "$db" -Atc "SELECT 'BRPK4Q72XWF2M63L'::sno, sno '\\x4e6f2160a0ff9a0a1033' = 'brpk4q72xwf2m63l'::text")" \
        "brpk4q72xwf2m63l|t"
done

# The server log since the start: every error above, sno's lines in ASCII, nothing invalid.
# (Before the UTF-8 database's errors, whose lines hold its characters.)
sleep 0.2
new="$(mktemp)"
trap 'drop_dbs; rm -f "$new"' EXIT
tail -c +$((offset + 1)) "$log" >"$new"
logged="$(grep -c 'ERROR:  invalid input syntax for type sno: ' "$new" || true)"
check "the server log has each of the $n_expected errors" "$((logged >= n_expected))" 1
check "the server log has é of EUC_JP escaped" "$(grep -cF 'invalid input syntax for type sno: "\x8f\xab\xb1"' "$new" || true)" 2
check "sno's lines in the server log are ASCII" \
    "$(grep -E 'ERROR:|DETAIL:|HINT:' "$new" | grep -cP '[^\x00-\x7f]' || true)" 0
check "no invalid byte sequence in the server log" \
    "$(grep -cE 'invalid byte sequence|has no equivalent in encoding' "$new" || true)" 0
check "no U+FFFD (a replaced byte) in the server log" "$(grep -c $'\xef\xbf\xbd' "$new" || true)" 0

# A UTF-8 database: the value as typed, control characters escaped, cut at a character.
expect sno_enc_utf8 "SELECT 'é'::sno" 'é' "A sno ID is exactly 16 characters from 2-9, a-x; the input has 2 bytes."
expect sno_enc_utf8 "SELECT E'22\\n2'::sno" '22\x0a2' "A sno ID is exactly 16 characters from 2-9, a-x; the input has 4 bytes."
expect_quoted sno_enc_utf8 "SELECT ('a' || repeat('é', 50))::sno" "\"a$(printf 'é%.0s' $(seq 19))...\" (101 bytes)" \
    "A sno ID is exactly 16 characters from 2-9, a-x; the input has 101 bytes."

exit "$fail"
