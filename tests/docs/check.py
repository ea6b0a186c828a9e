#!/usr/bin/env python3
"""The documentation's own checks: README.md and the manual in doc/.

    python3 tests/docs/check.py          # check; exit 1 and say what is wrong
    python3 tests/docs/check.py --fix    # rewrite each page's contents list from its headings

Checked:
- every relative link of README.md and doc/*.md names a file of the repository, and its
  #anchor a heading of that file (GitHub's anchors: lower case, punctuation dropped, spaces to
  hyphens, -1, -2 ... for repeats);
- every page of doc/ (but its index, doc/README.md) has a contents list, between
  <!-- contents --> and <!-- /contents -->, that is exactly its ## and ### headings, linked;
- the manual's index (doc/README.md) and README.md link every page of doc/, and the README's
  table of the manual is the index's; the README's ## Contents list is its ## headings;
- README.md is the front door: at most 400 lines;
- no fenced block is left open, and every ```mermaid block starts with a diagram type;
- the release's file names (release_problems): every package file name with a version
  (postgresql-NN-sno_VERSION-1_amd64.deb, sno-VERSION-pgNN-x86_64-linux.tar.gz and its folder)
  carries Cargo.toml's version, as .ci/lib.sh's package_deb and package_tarball name them, and
  so does "the install script `sno--VERSION.sql`" a package holds; every list of update scripts
  (two or more `sno--A--B.sql` in one paragraph or table row) is exactly sql/sno--*--*.sql, which
  a package holds all of (.ci/package); a range "`sno--A.sql` to `sno--B.sql`" runs from the
  first to the last install script in sql/. So a new version or update script cannot leave the
  install instructions naming files no package has. Release notes are history: not checked;
- the Python package sno-pg is not on PyPI (pip_problems): every `pip install` of it in those
  pages, python/README.md and python/sno_pg/*.py installs it from a path or a URL
  (`./python[convert]`, `"sno-pg[lease] @ git+..."`), never by name, and names only extras
  python/pyproject.toml has.
"""
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
README_MAX_LINES = 400
MERMAID_TYPES = ("flowchart", "graph", "sequenceDiagram", "gitGraph", "stateDiagram", "block-beta", "packet-beta")


def slug(text):
    text = re.sub(r"`|\*\*|<[^>]+>", "", text).strip().lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def blocks_and_headings(path):
    """([(level, title, anchor)], [problems]) of a Markdown file, code blocks skipped."""
    heads, problems, seen = [], [], {}
    fence = None
    lines = open(path, encoding="utf-8").read().split("\n")
    for i, line in enumerate(lines, 1):
        m = re.match(r"^(```+|~~~+)(.*)$", line)
        if m:
            if fence is None:
                fence = (m.group(1), m.group(2).strip(), i)
                if fence[1] == "mermaid":
                    first = next((l.strip() for l in lines[i:] if l.strip()), "")
                    if not first.startswith(MERMAID_TYPES):
                        problems.append(f"{path}:{i}: a mermaid block that starts with {first!r}")
            elif line.strip() == fence[0]:
                fence = None
            continue
        if fence is None:
            h = re.match(r"^(#{1,6}) (.*)$", line)
            if h:
                base = slug(h.group(2))
                n = seen.get(base, 0)
                seen[base] = n + 1
                heads.append((len(h.group(1)), h.group(2).strip(), base if n == 0 else f"{base}-{n}"))
    if fence is not None:
        problems.append(f"{path}:{fence[2]}: a fenced block that is never closed")
    return heads, problems


def strip_code(text):
    """The text without fenced blocks and inline code (links there are not links)."""
    text = re.sub(r"^(```+|~~~+).*?^\1[ \t]*$", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def contents(heads):
    out = []
    for level, title, anchor in heads:
        if level in (2, 3):
            out.append(f"{'  ' * (level - 2)}- [{title}](#{anchor})")
    return "\n".join(out)


V = r"\d+\.\d+\.\d+"


def vkey(v):
    return tuple(int(x) for x in v.split("."))


def units(text):
    """The paragraphs of a page (blank lines between), each table row on its own."""
    out = []
    for para in re.split(r"\n[ \t]*\n", text):
        lines = para.split("\n")
        if all(l.startswith("|") for l in lines if l.strip()):
            out += lines
        else:
            out.append(para)
    return out


def release_problems(files):
    """What the pages say of the release's files against Cargo.toml and sql/ (see the top)."""
    problems = []
    cargo = open(os.path.join(ROOT, "Cargo.toml"), encoding="utf-8").read()
    version = re.search(r'^version = "([^"]+)"$', cargo, re.M).group(1)
    sql = os.listdir(os.path.join(ROOT, "sql"))
    updates = sorted((f for f in sql if re.fullmatch(rf"sno--{V}--{V}\.sql", f)),
                     key=lambda f: [vkey(v) for v in re.findall(V, f)])
    installs = sorted((m.group(1) for m in map(lambda f: re.fullmatch(rf"sno--({V})\.sql", f), sql) if m), key=vkey)
    if not updates or not installs:
        return ["sql/: no sno--A--B.sql or sno--VERSION.sql (the release checks need them)"]
    for path in files:
        rel = os.path.relpath(path, ROOT)
        if rel == "doc/release-notes.md":
            continue
        text = open(path, encoding="utf-8").read()
        for i, line in enumerate(text.split("\n"), 1):
            names = re.finditer(rf"postgresql-(?:\d+|NN)-sno_({V})-1_[a-z0-9]+\.deb", line)
            names = list(names) + list(re.finditer(rf"\bsno-({V})-pg(?:\d+|NN)-x86_64-linux", line))
            names += list(re.finditer(rf"install script `sno--({V})\.sql`", line))
            for m in names:
                if m.group(1) != version:
                    problems.append(f"{rel}:{i}: {m.group(0)} names version {m.group(1)}, Cargo.toml's is {version}")
        for unit in units(text):
            listed = sorted(set(re.findall(rf"sno--{V}--{V}\.sql", unit)),
                            key=lambda f: [vkey(v) for v in re.findall(V, f)])
            if len(listed) >= 2 and listed != updates:
                where = text[: text.index(unit)].count("\n") + 1
                missing = [f for f in updates if f not in listed]
                extra = [f for f in listed if f not in updates]
                problems.append(f"{rel}:{where}: a list of update scripts that is not sql/sno--*--*.sql"
                                f" (missing: {', '.join(missing) or 'none'}; not in sql/: {', '.join(extra) or 'none'})")
            for a, b in re.findall(rf"`sno--({V})\.sql` to `sno--({V})\.sql`", unit):
                if (a, b) != (installs[0], installs[-1]):
                    where = text[: text.index(unit)].count("\n") + 1
                    problems.append(f"{rel}:{where}: install scripts sno--{a}.sql to sno--{b}.sql, but sql/ has"
                                    f" sno--{installs[0]}.sql to sno--{installs[-1]}.sql")
    return problems


def pip_problems(files):
    """`pip install` of sno-pg by name (it is not on PyPI), or with an extra it lacks."""
    problems = []
    pyproject = open(os.path.join(ROOT, "python", "pyproject.toml"), encoding="utf-8").read()
    section = re.search(r"^\[project\.optional-dependencies\]\n(.*?)(?=^\[|\Z)", pyproject, re.M | re.S)
    extras = set(re.findall(r"^([a-z0-9_-]+)\s*=", section.group(1), re.M)) if section else set()
    pkg = os.path.join(ROOT, "python", "sno_pg")
    files = [f for f in files if not f.endswith("release-notes.md")] + [os.path.join(ROOT, "python", "README.md")]
    files += sorted(os.path.join(pkg, f) for f in os.listdir(pkg) if f.endswith(".py"))
    for path in files:
        rel = os.path.relpath(path, ROOT)
        for i, line in enumerate(open(path, encoding="utf-8").read().split("\n"), 1):
            for m in re.finditer(r"""pip install\s+["']?(sno-pg|\./python)(?:\[([^\]]*)\])?(\s*@)?""", line):
                if m.group(1) == "sno-pg" and not m.group(3):
                    problems.append(f"{rel}:{i}: {m.group(0)}...: sno-pg is not on PyPI (install ./python, or "
                                    f"\"sno-pg[...] @ git+<repository>#subdirectory=python\")")
                for extra in (m.group(2) or "").split(","):
                    if extra.strip() and extra.strip() not in extras:
                        problems.append(f"{rel}:{i}: the extra {extra.strip()!r}: python/pyproject.toml has "
                                        f"{', '.join(sorted(extras))}")
    return problems


def main():
    fix = "--fix" in sys.argv[1:]
    problems = []
    doc = os.path.join(ROOT, "doc")
    pages = sorted(f for f in os.listdir(doc) if f.endswith(".md"))
    files = [os.path.join(ROOT, "README.md")] + [os.path.join(doc, f) for f in pages]
    anchors = {}
    for path in files:
        heads, probs = blocks_and_headings(path)
        problems += probs
        anchors[os.path.realpath(path)] = {a for _, _, a in heads}
        rel = os.path.relpath(path, ROOT)
        if rel.startswith("doc/") and rel != "doc/README.md":
            text = open(path, encoding="utf-8").read()
            m = re.search(r"<!-- contents -->\n(.*?)\n?<!-- /contents -->", text, re.S)
            want = contents(heads)
            if not m:
                problems.append(f"{rel}: no contents list (<!-- contents --> ... <!-- /contents -->)")
            elif m.group(1).strip() != want:
                if fix:
                    text = text[: m.start()] + "<!-- contents -->\n" + want + "\n<!-- /contents -->" + text[m.end():]
                    open(path, "w", encoding="utf-8").write(text)
                    print(f"rewrote the contents list of {rel}")
                else:
                    problems.append(f"{rel}: the contents list is not its headings (python3 tests/docs/check.py --fix)")
    for path in files:
        rel = os.path.relpath(path, ROOT)
        text = strip_code(open(path, encoding="utf-8").read())
        for target in re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", text):
            if re.match(r"^[a-z]+:", target):
                continue
            file_part, _, anchor = target.partition("#")
            dest = os.path.realpath(os.path.join(os.path.dirname(path), file_part)) if file_part else os.path.realpath(path)
            if not os.path.exists(dest):
                problems.append(f"{rel}: a link to {target}: no such file")
            elif anchor and dest.endswith(".md"):
                if dest not in anchors:
                    anchors[dest] = {a for _, _, a in blocks_and_headings(dest)[0]}
                if anchor not in anchors[dest]:
                    problems.append(f"{rel}: a link to {target}: no such heading")
        if rel in ("README.md", "doc/README.md"):
            for page in pages:
                if page == "README.md":
                    continue
                link = page if rel == "doc/README.md" else f"doc/{page}"
                if not re.search(r"\]\(" + re.escape(link) + r"(#[^)]*)?\)", text):
                    problems.append(f"{rel}: no link to {link}")
    # The README's own contents list is its ## headings; its table of the manual is doc/README.md's.
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    heads, _ = blocks_and_headings(os.path.join(ROOT, "README.md"))
    want = [f"- [{t}](#{a})" for lvl, t, a in heads if lvl == 2 and t != "Contents"]
    m = re.search(r"^## Contents\n\n((?:- .*\n)+)", readme, re.M)
    if not m or m.group(1).strip().split("\n") != want:
        problems.append("README.md: its ## Contents list is not its ## headings:\n  " + "\n  ".join(want))

    def manual_rows(text, prefix):
        return [re.sub(r"\]\(" + re.escape(prefix), "](", l) for l in text.split("\n")
                if re.match(r"^\| \[[^\]]+\]\(" + re.escape(prefix) + r"[a-z-]+\.md\)", l)]
    index = open(os.path.join(doc, "README.md"), encoding="utf-8").read()
    if manual_rows(readme, "doc/") != manual_rows(index, ""):
        problems.append("README.md's table of the manual differs from doc/README.md's (make them the same)")
    problems += release_problems(files)
    problems += pip_problems(files)
    n = readme.count("\n")
    if n > README_MAX_LINES:
        problems.append(f"README.md: {n} lines, more than {README_MAX_LINES} (move the detail to doc/)")
    for p in problems:
        print("FAIL:", p)
    print(f"{'FAILED' if problems else 'ok'}: {len(files)} files, README.md {n} lines, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
