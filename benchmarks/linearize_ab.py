"""Paired before/after benchmark of ``nhcontrol.linearize`` on the benchmark bicycle (prints JSON).

Run ``python benchmarks/linearize_ab.py REV [--repeat R]`` from a checkout: the source of git
revision ``REV`` (e.g. ``HEAD~3`` or a commit) is exported into a temporary directory and
imported under another package name (``nhcontrol_before``), next to the working tree's
``nhcontrol``; both compile (or load from the disk cache) the same bicycle model. Every repeat
calls the two versions one after the other, alternating which goes first, and times each call
with ``time.process_time`` (CPU time of this process): on a machine shared with other jobs the
two medians see the same load, so their ratio is meaningful even when the absolute times drift.

Keys (seconds, medians): ``third_procedure_s`` (one ``linearize(cm, ref, partition)`` at
``t = 0``, reference check on), ``third_procedure_unchecked_s`` (``check=False``) and
``stacked_per_point_s`` (one call with 1,000 times, divided by 1,000), each as
``{"before", "after", "after_over_before"}``; ``identical_one_point`` (``A``, ``B`` equal bit for
bit) and ``max_rel_diff_stacked`` (largest difference of the stacked ``A`` relative to its
largest entry); ``before``: the revision.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

_NAME = "nhcontrol_before"


def _export(rev: str, dest: Path) -> None:
    """``src/nhcontrol`` of ``rev`` as the package ``dest/nhcontrol_before`` (imports renamed)."""
    root = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True,
                          text=True, check=True).stdout.strip()
    blob = subprocess.run(["git", "-C", root, "archive", rev, "src/nhcontrol"],
                          capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        tar.extractall(dest, filter="data")
    pkg = dest / _NAME
    (dest / "src" / "nhcontrol").rename(pkg)
    pattern = re.compile(r"\bnhcontrol(?=[.\s]|$)", re.MULTILINE)
    for path in pkg.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        path.write_text(pattern.sub(_NAME, text), encoding="utf-8")


def _paired(before, after, repeat: int) -> tuple[float, float]:
    before(), after()                                       # warm-up
    tb: list[float] = []
    ta: list[float] = []
    clock = time.process_time
    for i in range(repeat):
        order = ((before, tb), (after, ta)) if i % 2 == 0 else ((after, ta), (before, tb))
        for fn, acc in order:
            t0 = clock()
            fn()
            acc.append(clock() - t0)
    return statistics.median(tb), statistics.median(ta)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev", help="git revision measured as 'before'")
    parser.add_argument("--repeat", type=int, default=1000)
    parser.add_argument("--speed", type=float, default=5.0)
    args = parser.parse_args(argv)

    tmp = tempfile.TemporaryDirectory(prefix="nhc_ab_")
    _export(args.rev, Path(tmp.name))
    sys.path.insert(0, tmp.name)
    import importlib

    from nhcontrol.linearization import Partition, linearize
    from nhcontrol.models import benchmark_bicycle as bb

    try:
        old_lin = importlib.import_module(f"{_NAME}.linearization")
    except ModuleNotFoundError:     # revisions before the subpackage was renamed
        old_lin = importlib.import_module(f"{_NAME}.linearize")
    old_bb = importlib.import_module(f"{_NAME}.models.benchmark_bicycle")

    cm, cm0 = bb.model(), old_bb.model()
    ref, ref0 = bb.steady_forward(cm, args.speed), old_bb.steady_forward(cm0, args.speed)
    part = Partition.from_dict(bb.PARTITION_4_172)
    part0 = old_lin.Partition.from_dict(old_bb.PARTITION_4_172)
    ts = np.linspace(0.0, 1.0, 1000)
    one, one0 = linearize(cm, ref, part), old_lin.linearize(cm0, ref0, part0)
    many, many0 = linearize(cm, ref, part, t=ts), old_lin.linearize(cm0, ref0, part0, t=ts)

    out: dict = {"before": args.rev, "kernel_backend": str(getattr(cm, "backend", "python")),
                 "identical_one_point": bool(np.array_equal(one.A, one0.A)
                                             and np.array_equal(one.B, one0.B)),
                 "max_rel_diff_stacked": float(np.max(np.abs(many.A - many0.A))
                                               / np.max(np.abs(many0.A)))}
    cases = [
        ("third_procedure_s", lambda: old_lin.linearize(cm0, ref0, part0),
         lambda: linearize(cm, ref, part), args.repeat, 1),
        ("third_procedure_unchecked_s", lambda: old_lin.linearize(cm0, ref0, part0, check=False),
         lambda: linearize(cm, ref, part, check=False), args.repeat, 1),
        ("stacked_per_point_s", lambda: old_lin.linearize(cm0, ref0, part0, t=ts),
         lambda: linearize(cm, ref, part, t=ts), max(10, args.repeat // 50), ts.size),
    ]
    for key, before, after, repeat, per in cases:
        b, a = _paired(before, after, repeat)
        out[key] = {"before": b / per, "after": a / per, "after_over_before": a / b}
    print(json.dumps(out, indent=2))
    tmp.cleanup()
    return out


if __name__ == "__main__":
    main()
