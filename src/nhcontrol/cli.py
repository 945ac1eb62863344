"""Command line interface: ``nhcontrol reproduce <target> [--json] [--out DIR]``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from . import __version__
from .reproduce import TARGETS, load


def _to_jsonable(obj):
    import numpy as np

    if isinstance(obj, dict):
        return {str(k): _to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _to_jsonable(obj.tolist())
    if isinstance(obj, (np.floating,)):
        return float(obj)
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.bool_,)):
        return bool(obj)
    if isinstance(obj, complex):
        return [obj.real, obj.imag]
    return obj


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nhcontrol",
        description="Exact linearization, analysis and control of nonholonomic multibody systems.",
    )
    parser.add_argument("--version", action="version", version=f"nhcontrol {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    rep = sub.add_parser(
        "reproduce",
        help="reproduce a published result of the thesis",
        description="Reproduce a published result. Targets:\n" + "\n".join(
            f"  {name:20s} {desc}" for name, (_, desc) in TARGETS.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    rep.add_argument("target", choices=sorted(TARGETS), metavar="TARGET",
                     help="one of: " + ", ".join(sorted(TARGETS)))
    rep.add_argument("--json", action="store_true", help="print one JSON object to stdout")
    rep.add_argument("--out", type=Path, default=None, help="folder for figures (PNG) and JSON")
    rep.add_argument("--quick", action="store_true", help="coarser grids, for smoke tests")
    sub.add_parser("targets", help="list the reproduce targets")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    if args.command == "targets":
        for name, (_, desc) in TARGETS.items():
            print(f"{name:20s} {desc}")
        return 0
    module = load(args.target)
    if args.out is not None:
        try:
            args.out.mkdir(parents=True, exist_ok=True)
            probe = args.out / ".nhcontrol-write-test"
            probe.write_text("")
            probe.unlink()
        except OSError as exc:
            parser.exit(2, f"nhcontrol: cannot write figures to --out {str(args.out)!r}: "
                           f"{exc.strerror or exc}; choose a writable folder\n")
    result = _to_jsonable(module.run(out=args.out, quick=args.quick))
    if args.out is not None:
        (args.out / f"{args.target}.json").write_text(json.dumps(result, indent=2))
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(module.summary(result))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
