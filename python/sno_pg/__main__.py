"""``python -m sno_pg convert ...``: the same as ``python -m sno_pg.convert ...``."""

import sys

USAGE = "usage: python -m sno_pg convert TABLE --meta N [options]   (python -m sno_pg convert --help)"


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    if argv[0] != "convert":
        print(f"unknown command {argv[0]!r}\n{USAGE}", file=sys.stderr)
        return 2
    from sno_pg.convert import main as convert_main

    return convert_main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
