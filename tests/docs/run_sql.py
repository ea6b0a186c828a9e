#!/usr/bin/env python3
"""Runs the ```sql blocks of a documentation page as printed, in order, in one session of a
fresh database, and checks what the page says they print.

    run_sql.py PSQL MAJOR PAGE DATABASE    (PGHOST, PGPORT, PGUSER from the environment)

For each statement of a block (a statement ends at a line whose code ends with `;`):
- the `-- ERROR:  message` lines under it (with `(SQLSTATE xxxxx)` at the end, or not) say it
  fails with that message (and SQLSTATE); a `-- DETAIL:  ...` or `-- HINT:  ...` line under one,
  with that detail or hint;
  a statement with no such line must succeed;
- a comment at the end of its last line that starts with a sno ID (16 characters of 2-9, a-x),
  `t` or `f` is its one value;
- the `--  ...` lines under it (psql's output, as printed) must each be a line of its output
  (spaces collapsed; `...` in such a line stands for anything);
- a statement marked `(PostgreSQL 16+)` must fail on an older major.
The database is dropped first and left behind for a look; sno is created in it first unless the
page's first block does that itself. Prints one ok:/FAIL: line per statement checked and a total;
exit 1 on any failure.
"""
import os
import re
import subprocess
import sys

SNO = re.compile(r"^[2-9a-x]{16}$")


def blocks(path):
    out, cur = [], None
    for n, line in enumerate(open(path, encoding="utf-8").read().split("\n"), 1):
        if cur is None and line == "```sql":
            cur = (n, [])
        elif cur is not None and line == "```":
            out.append(cur)
            cur = None
        elif cur is not None:
            cur[1].append((n, line))
    return out


def code_part(line):
    """The line without a trailing -- comment (quotes respected)."""
    q = False
    for i, c in enumerate(line):
        if c == "'":
            q = not q
        elif not q and line.startswith("--", i):
            return line[:i], line[i + 2:]
    return line, None


def statements(block_lines):
    """[(first line number, sql text, trailing comment, [comment lines after it])]"""
    out, cur, start = [], [], None
    for n, line in block_lines:
        code, comment = code_part(line)
        if not cur and not code.strip():
            if comment is not None and out and out[-1][3] is not None:
                out[-1][3].append(comment)
            continue
        if start is None:
            start = n
        cur.append(line)
        if code.rstrip().endswith(";"):
            out.append([start, "\n".join(cur), comment, []])
            cur, start = [], None
    if cur:
        out.append([start, "\n".join(cur), None, []])
    return out


def norm(s):
    return re.sub(r"\s+", " ", s).strip()


def main():
    psql, major, page, db = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    base = [psql, "-X", "-q", "-d"]
    env = dict(os.environ, PGTZ="UTC", PGCLIENTENCODING="UTF8")
    admin = subprocess.run(base + ["postgres", "-c", f'DROP DATABASE IF EXISTS "{db}"', "-c", f'CREATE DATABASE "{db}"'],
                           env=env, capture_output=True, text=True)
    if admin.returncode != 0:
        print(f"FAIL: {page}: cannot make database {db}: {admin.stderr.strip()}")
        return 1
    bs = blocks(page)
    stmts = [s for _, lines in bs for s in statements(lines)]
    if not stmts:
        print(f"FAIL: {page}: no ```sql block")
        return 1
    script = ["\\set VERBOSITY verbose", "\\pset footer off", "\\pset pager off"]
    if not re.search(r"^CREATE EXTENSION sno\b", "\n".join(l for _, l in bs[0][1]), re.M):
        script.append("CREATE EXTENSION sno;")
    for i, (n, sql, _, _) in enumerate(stmts):
        script += [f"\\echo @@{i}", sql]
    script.append(f"\\echo @@{len(stmts)}")
    run = subprocess.run(base + [db, "-f", "-"], input="\n".join(script) + "\n", env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    text = run.stdout
    parts = re.split(r"^@@(\d+)\n", text, flags=re.M)
    outs = {int(parts[i]): parts[i + 1] for i in range(1, len(parts) - 1, 2)}
    failed = 0
    rel = os.path.relpath(page)
    for i, (n, sql, trailing, comments) in enumerate(stmts):
        out = outs.get(i)
        what = f"{rel}:{n}: {norm(sql)[:70]}"
        problems = []
        if out is None:
            problems.append("no output at all (the session ended?)")
            out = ""
        errs = re.findall(r"ERROR:  ([0-9A-Z]{5}): (.*)", out)
        details = re.findall(r"^DETAIL:  (.*)$", out, re.M)
        want_errs = []
        for c in comments:
            m = re.match(r"^ ERROR:  (.*?)(?:\s+\(SQLSTATE ([0-9A-Z]{5})\))?$", c)
            if m:
                want_errs.append([m.group(1), m.group(2), None])
            m = re.match(r"^ DETAIL:  (.*)$", c)
            if m and want_errs:
                want_errs[-1][2] = m.group(1)
            m = re.match(r"^ HINT:  (.*)$", c)
            if m and want_errs:
                want_errs[-1].append(m.group(1))
        newer = re.search(r"\(PostgreSQL (\d+)\+\)", sql + (trailing or ""))
        if newer and major < int(newer.group(1)):
            if not errs:
                problems.append(f"succeeded on PostgreSQL {major}, although the page says {newer.group(0)}")
        elif want_errs:
            if [e[1] for e in errs] != [w[0] for w in want_errs]:
                problems.append(f"errors {[e[1] for e in errs]}, the page says {[w[0] for w in want_errs]}")
            hints = re.findall(r"^HINT:  (.*)$", out, re.M)
            for (code, _), (_, want_code, want_detail, *want_hints) in zip(errs, want_errs):
                if want_code and code != want_code:
                    problems.append(f"SQLSTATE {code}, the page says {want_code}")
                if want_detail and want_detail not in details:
                    problems.append(f"DETAIL {details}, the page says {want_detail!r}")
                for h in want_hints:
                    if h not in hints:
                        problems.append(f"HINT {hints}, the page says {h!r}")
        elif errs:
            problems.append(f"failed: {errs}")
        if not errs:
            rows = [norm(l) for l in out.split("\n")]
            if trailing and trailing.strip():
                first = trailing.split()[0]
                if SNO.match(first) or first in ("t", "f"):
                    data = [r for r in rows if r and not re.match(r"^[-+]+$", r)]
                    if len(data) < 2 or data[1] != first:
                        problems.append(f"printed {data[1:2]}, the page says {first}")
            for c in comments:
                if c.startswith("  ") and not re.match(r"^ (ERROR|DETAIL|HINT):", c):
                    # "..." in a printed line stands for anything
                    want = re.compile("^" + ".*".join(re.escape(p) for p in norm(c).split("...")) + "$")
                    if not any(want.match(r) for r in rows):
                        problems.append(f"no output line {norm(c)!r}")
        if problems:
            failed += 1
            print(f"FAIL: {what}: " + "; ".join(problems))
            print("  output: " + out.strip().replace("\n", "\n          "))
        else:
            print(f"ok: {what}")
    if len(outs) != len(stmts) + 1:
        print(f"FAIL: {rel}: the session printed {len(outs)} of {len(stmts) + 1} markers")
        failed += 1
    print(f"{rel}: {len(stmts)} statements in {len(bs)} blocks, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
