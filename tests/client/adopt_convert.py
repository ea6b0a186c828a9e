"""The helper of tests/client/adopt_convert.sh (psycopg 3, from the venv the script fills).

  adopt_convert.py client DSN OUT STOPFILE SEED
      A client that inserts, updates and reads the tables being converted until STOPFILE exists,
      one statement per transaction, timing each one. Every sno ID it is given (the new key an
      INSERT returns once the column exists, and sno_generate's) goes to OUT.ids as
      "table<TAB>old key<TAB>sno" lines; OUT.stats gets a JSON summary: statements, the slowest
      one and its time, connection errors (the test's crash) and any other error. Survives the
      server's crash: it reconnects and goes on.

  adopt_convert.py times DSN TABLE KIND
      Checks sno_time(sno_id) of TABLE's rows against the time in their old key, decoded here,
      independently of the tool's SQL: KIND uuid7 (the first 48 bits, Unix ms) or ulid (the first
      10 Crockford base32 characters). Prints "checked N mismatched M" for the rows whose old key
      carries a time in sno's range.
"""

import datetime
import json
import os
import random
import sys
import time
import uuid

import psycopg

ULID = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def uuid7(ms):
    r = random.getrandbits(74)
    v = (ms << 80) | (0x7 << 76) | ((r >> 62) << 64) | (0b10 << 62) | (r & ((1 << 62) - 1))
    return uuid.UUID(int=v)


def ulid(ms):
    return "".join(ULID[(ms >> (5 * (9 - i))) & 31] for i in range(10)) + "".join(random.choice(ULID) for _ in range(16))


def client(dsn, out, stopfile, seed):
    rnd = random.Random(int(seed))
    stats = {"statements": 0, "max": 0.0, "max_op": "", "over_half_second": 0, "conn_errors": 0, "other_errors": []}
    ids = open(out + ".ids", "w")
    conn = None
    ev7_ids = []
    ops = [("ins_legacy", 4), ("upd_legacy", 4), ("read_legacy", 3), ("ins_order", 3), ("upd_order", 2),
           ("ins_note", 1), ("gen", 1), ("ins_ev7", 2), ("upd_ev7", 1), ("ins_ev7_child", 1), ("ins_ul", 1)]
    names = [o for o, w in ops for _ in range(w)]
    while not os.path.exists(stopfile):
        if conn is None or conn.closed or conn.broken:
            try:
                conn = psycopg.connect(dsn, autocommit=True, connect_timeout=2, application_name="adopt_client")
                if not ev7_ids:
                    ev7_ids = [r[0] for r in conn.execute("SELECT id FROM ev7 LIMIT 500")]
            except psycopg.OperationalError:
                conn = None
                time.sleep(0.2)
                continue
        op = rnd.choice(names)
        ms = time.time_ns() // 1_000_000
        lid = rnd.randint(1, 100000)
        t = time.monotonic()
        try:
            if op == "ins_legacy":
                r = conn.execute("INSERT INTO legacy (created_at, payload) VALUES (now(), 'client') "
                                 "RETURNING id, to_jsonb(legacy) ->> 'sno_id'").fetchone()
                rec = ("legacy", str(r[0]), r[1] or "")
            elif op == "upd_legacy":
                conn.execute("UPDATE legacy SET payload = 'updated' WHERE id = %s", [lid])
                rec = None
            elif op == "read_legacy":
                conn.execute("SELECT id, created_at, payload FROM legacy WHERE id = %s", [lid]).fetchall()
                rec = None
            elif op == "ins_order":
                conn.execute("INSERT INTO orders (legacy_id, amount) VALUES (%s, 7)", [lid])
                rec = None
            elif op == "upd_order":
                conn.execute("UPDATE orders SET legacy_id = %s WHERE oid = %s", [lid, rnd.randint(1, 50000)])
                rec = None
            elif op == "ins_note":
                conn.execute("INSERT INTO notes (legacy_id, note) VALUES (%s, 'client')", [lid])
                rec = None
            elif op == "gen":
                rec = ("generate", "", conn.execute("SELECT sno_generate(1)::text").fetchone()[0])
            elif op == "ins_ev7":
                k = uuid7(ms)
                r = conn.execute("INSERT INTO ev7 (id, payload) VALUES (%s, 'client') RETURNING to_jsonb(ev7) ->> 'sno_id'",
                                 [k]).fetchone()
                rec = ("ev7", str(k), r[0] or "")
            elif op == "upd_ev7":
                conn.execute("UPDATE ev7 SET payload = 'updated' WHERE id = %s", [rnd.choice(ev7_ids)])
                rec = None
            elif op == "ins_ev7_child":
                conn.execute("INSERT INTO ev7_child (ev, n) VALUES (%s, 2)", [rnd.choice(ev7_ids)])
                rec = None
            else:
                k = ulid(ms)
                r = conn.execute("INSERT INTO ul (id, payload) VALUES (%s, 'client') RETURNING to_jsonb(ul) ->> 'sno_id'",
                                 [k]).fetchone()
                rec = ("ul", k, r[0] or "")
        except psycopg.OperationalError as e:
            if conn.broken or conn.closed or isinstance(e, psycopg.errors.AdminShutdown):
                stats["conn_errors"] += 1
                time.sleep(0.2)
                continue
            stats["other_errors"].append(f"{op}: {str(e).strip().splitlines()[0]}")
            continue
        except psycopg.Error as e:
            stats["other_errors"].append(f"{op}: {str(e).strip().splitlines()[0]}")
            continue
        dt = time.monotonic() - t
        stats["statements"] += 1
        if dt > 0.5:
            stats["over_half_second"] += 1
        if dt > stats["max"]:
            stats["max"], stats["max_op"] = dt, op
        if rec is not None:
            ids.write("\t".join(rec) + "\n")
        time.sleep(0.002)
    ids.close()
    stats["other_errors"] = stats["other_errors"][:20]
    with open(out + ".stats", "w") as f:
        json.dump(stats, f)


def times(dsn, table, kind):
    conn = psycopg.connect(dsn)
    lo, hi = 1262304000000, 3461327255552
    checked = bad = 0
    # the rows the tool converted (reserved partitions); those inserted later carry their insert time
    for k, t in conn.execute(f"SELECT id, sno_time(sno_id) FROM {table} WHERE sno_partition(sno_id) >= 61440"):
        if kind == "uuid7":
            if k.version != 7:
                continue
            ms = k.int >> 80
        else:
            ms = 0
            for ch in k[:10].upper():
                ms = ms * 32 + ULID.index(ch)
        if not lo <= ms < hi:
            continue
        checked += 1
        want = datetime.datetime.fromtimestamp(ms // 4 * 4 / 1000, datetime.timezone.utc)
        if t != want:
            bad += 1
            if bad <= 3:
                print(f"  {table}: {k}: sno_time {t}, want {want}", file=sys.stderr)
    print(f"checked {checked} mismatched {bad}")


if __name__ == "__main__":
    if sys.argv[1] == "client":
        client(*sys.argv[2:6])
    elif sys.argv[1] == "times":
        times(*sys.argv[2:5])
    else:
        sys.exit(f"unknown command {sys.argv[1]}")
