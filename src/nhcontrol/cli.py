"""Command line interface: ``nhcontrol [-v] reproduce <target> [--json] [--out DIR] [--format FMT] [--animate]``."""

from __future__ import annotations

import argparse
import errno
import json
import logging
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Sequence

from . import __version__
from ._util.debris import OWNER_FILE
from ._util.errors import NhcontrolError
from .plotting.style import FORMATS, REFERENCES, SIZES, figure_format, figure_size, house_style
from .reproduce import SPECIFIC_OPTIONS, TARGET_OPTIONS, TARGETS, load, targets_with

ENVIRONMENT: dict[str, str] = {
    "NHCONTROL_CACHE_DIR": "folder of the compiled-kernel cache: an absolute path, ~ expanded "
                           "(default ~/.cache/nhcontrol; nhcontrol.compiled.default_cache_dir())",
    "NHCONTROL_BACKEND": "kernel back-end: c, python or auto (default auto: C when a compiler "
                         "works, else Python)",
    "NHCONTROL_PROGRESS": "progress bars on standard error: 0 off, 1 always (every step, at "
                          "once; default: on an interactive terminal, for steps longer than 2 s); "
                          "other values refused",
    "NHCONTROL_BLAS_THREADS": "BLAS threads for large matrices (an integer, or off to leave the "
                              "BLAS alone)",
    "NHCONTROL_MAX_BYTES": "largest single allocation allowed, bytes: a number >= 1 (default half "
                           "the available memory)",
    "NHCONTROL_LOCK_TIMEOUT": "seconds to wait for the kernel-cache lock held by another process "
                              "(default 30; the error names the holder)",
    "NHCONTROL_MAX_ITERATIONS": "largest number of steps a user-sized loop (horizons, nodes, "
                                "samples) may take before it is refused up front: a number >= 1 "
                                "(default 1e7)",
    "NHCONTROL_SHIPPED_ROUTINES": "0: ignore the routine libraries compiled when nhcontrol was "
                                  "installed (they are then compiled into the kernel cache on "
                                  "first use); 1 or unset: use them",
    "NHCONTROL_TRACEBACK": "1: show the full traceback instead of the one-line CLI error (0 or "
                           "unset: one line)",
}
"""Every environment variable the library reads, with what it does (shown by ``--help``)."""


def _environment_epilog() -> str:
    from .compiled.cache import default_cache_dir

    lines = ["Environment variables:"]
    lines += [f"  {name:24s} {text}" for name, text in ENVIRONMENT.items()]
    try:
        lines.append(f"Kernel cache in use: {default_cache_dir()}")
    except NhcontrolError as exc:      # a bad NHCONTROL_CACHE_DIR: _check_environment stops the run
        lines.append(f"Kernel cache: {exc}")
    lines.append("Logging: -v prints what the library does (builds, cache decisions, solver "
                 "fallbacks, long runs) on standard error, -vv more; silent by default.")
    return "\n".join(lines)

_SOURCES_EPILOG = (
    "Sources: 'the thesis' (equation, section and figure numbers) is\n  "
    + REFERENCES["thesis"] + ";\n  the benchmark bicycle is "
    + REFERENCES["meijaard2007"] + ";\n  the road-vehicle models follow the review "
    + REFERENCES["road_review"] + ".\n"
    "Full bibliography: docs/references.md.")


def _end_of_run(args: argparse.Namespace, result: dict) -> str:
    """Where the figures are, or how to get them."""
    if args.out is None:
        return (f"No figures written; add --out DIR (and --format png|svg|pdf) to save them, "
                f"e.g. nhcontrol reproduce {args.target} --out figures/")
    figs = result.get("figures") or []
    names = ", ".join(Path(str(f)).name for f in figs)
    what = f"Figures ({args.fmt}): {names}" if figs else "Figures"
    return f"{what} and {args.target}.json written to {args.out}"


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


def _target_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict:
    """The target-specific options given on the command line, checked against the static table
    `nhcontrol.reproduce.TARGET_OPTIONS` (no target is imported: a usage error answers at once).
    ``parser.error`` exits with status 2 naming the targets that do take a refused option."""
    accepted = TARGET_OPTIONS.get(args.target, frozenset())
    given = {k: getattr(args, k) for k in SPECIFIC_OPTIONS if k != "animate"
             and getattr(args, k, None) is not None}
    if getattr(args, "animate", False):
        given["animate"] = True
    for k in given:
        if k not in accepted:
            able = targets_with(k)
            parser.error(f"--{k} does not apply to target {args.target!r}; targets that take "
                         f"--{k}: {', '.join(able) if able else 'none'}")
    if given.get("animate") and args.out is None:
        parser.error("--animate writes a file: give --out DIR")
    if "n" in given and given["n"] < 1:
        parser.error(f"--n must be a positive number of runs, got {given['n']}")
    if args.out is not None:
        _check_out_folder(parser, args.out)
    return given


def _check_out_folder(parser: argparse.ArgumentParser, out: Path) -> None:
    """--out must name a folder (existing or to be created), not a file: checked before any
    work, on the path alone (whether the folder can be written is found when it is made)."""
    for p in (out, *out.parents):
        if p.exists():
            if not p.is_dir():
                what = "names a file" if p == out else f"is inside {str(p)!r}, which is a file"
                parser.error(f"--out {str(out)!r} {what}; --out takes a folder for the figures "
                             f"and the JSON (it is created if missing)")
            return


def _relocate(obj, old: str, new: str):
    """``obj`` with every string that starts with the path ``old`` rewritten to start with ``new``."""
    if isinstance(obj, str):
        return new + obj[len(old):] if obj.startswith(old) else obj
    if isinstance(obj, dict):
        return {k: _relocate(v, old, new) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_relocate(v, old, new) for v in obj]
    return obj


def _collect(staging: Path) -> dict[str, bytes]:
    """The files a target wrote into ``staging`` (relative POSIX path -> bytes), owner file left out."""
    return {src.relative_to(staging).as_posix(): src.read_bytes()
            for src in sorted(staging.rglob("*")) if src.is_file() and src.name != OWNER_FILE}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nhcontrol",
        description="Exact linearization, analysis and control of nonholonomic multibody systems.",
        epilog=_environment_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"nhcontrol {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="log what the library does on standard error (-vv: debug)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    rep = sub.add_parser(
        "reproduce",
        help="reproduce a published result of the thesis",
        description="Reproduce a published result. Targets:\n" + "\n".join(
            f"  {name:20s} {desc}" for name, (_, desc) in TARGETS.items()),
        epilog=_SOURCES_EPILOG + "\n\n" + _environment_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    rep.add_argument("-v", "--verbose", action="count", default=0, dest="verbose_sub",
                     help="log what the library does on standard error (-vv: debug)")
    rep.add_argument("target", choices=sorted(TARGETS), metavar="TARGET",
                     help="one of: " + ", ".join(sorted(TARGETS)))
    rep.add_argument("--json", action="store_true", help="print one JSON object to stdout")
    rep.add_argument("--out", type=Path, default=None,
                     help="folder for the figures and <target>.json (without it no figure is "
                          "written)")
    rep.add_argument("--format", choices=FORMATS, default="png", dest="fmt",
                     help="figure format with --out: png (300 dpi), svg or pdf (default png)")
    rep.add_argument("--size", choices=tuple(SIZES), default="screen",
                     help="figure widths: screen (5.5 in, 7.5 in for several panels), column "
                          "(3.5 in, one journal column) or page (7.2 in, two columns); default "
                          "screen")
    rep.add_argument("--quick", action="store_true", help="coarser grids, for smoke tests")
    rep.add_argument("--force", action="store_true",
                     help="with --out: overwrite files there that nhcontrol did not write (or "
                          "that were edited since); without it such files are kept and the run "
                          "stops with exit code 2")
    rep.add_argument("--animate", action="store_true",
                     help="with --out: also write a GIF of the target's simulation "
                          f"({', '.join(targets_with('animate'))}; MP4 from Python with "
                          "nhcontrol.plotting.animate when ffmpeg is installed)")
    mc = rep.add_argument_group(f"Monte-Carlo targets ({', '.join(targets_with('n'))})")
    mc.add_argument("--n", type=int, default=None, metavar="N",
                    help="number of runs (monte-carlo-ball-plate: per controller, default 1000; "
                         "8 with --quick)")
    mc.add_argument("--address", default=None, metavar="ADDR",
                    help="Dask scheduler address (tcp://host:8786): run on that cluster")
    mc.add_argument("--backend", choices=("serial", "processes", "dask"), default=None,
                    help="where the runs go (default: dask with --address, else processes "
                         "for 32 runs or more, else serial)")
    sub.add_parser("targets", help="list the reproduce targets")
    exp = sub.add_parser(
        "export-c", help="write standalone C99 sources of a model and its linearization",
        description="Write C99 sources (no Python dependency) of MODEL: its kernels, the minimal-state "
                    "right-hand side and the one-point third procedure with its checks, a Makefile "
                    "and nhc_check.c (JSON point on stdin -> A, B on stdout). See "
                    "nhcontrol.interop.export_c.")
    exp.add_argument("model", metavar="MODEL",
                     help="a catalogue name (benchmark_bicycle, sleigh, ...) or package.module:function")
    exp.add_argument("--out", type=Path, required=True,
                     help="output folder (created); files nhcontrol did not write there are "
                          "never overwritten without --force, symbolic links never followed")
    exp.add_argument("--force", action="store_true",
                     help="overwrite files in --out that nhcontrol did not write (or that were "
                          "edited since the last export)")
    exp.add_argument("--partition", default=None,
                     help="a partition constant of the model's module (e.g. PARTITION_4_172) or "
                          "'independent=a,b;admissible_dependent=c;dependent=d'")
    exp.add_argument("--inputs", default=None,
                     help="comma-separated actuators for a catalogue model's build(inputs=...)")
    exp.add_argument("--controller", choices=EXPORT_CONTROLLERS, default=None,
                     help="also export the tracking controller of the model's reproduce target "
                          "(ball_plate: the case of 'reproduce nmpc') as C99 with the closed-loop "
                          "harness nhc_loop (JSON lines in, inputs out)")
    exp.add_argument("--estimator", choices=EXPORT_ESTIMATORS, default=None,
                     help="with --controller: the estimator in the loop (kf: linearized Kalman "
                          "filter; ekf: EKF on the constraint manifold); nhc_loop then reads "
                          "measurements {\"t\", \"y\"}")
    exp.add_argument("--steps", type=int, default=None,
                     help="with --controller: samples the exported schedule covers (default the "
                          "controller's)")
    return parser


EXPORT_CONTROLLERS = ("lqr", "mpc", "rti")
EXPORT_ESTIMATORS = ("kf", "ekf")
EXPORT_DESIGNS = {"ball_plate": "nhcontrol.applications.ball_plate_control"}
"""Catalogue models whose reproduce target builds tracking controllers that export to C."""


def _export_controller(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """``export-c MODEL --controller ... [--estimator ...]``: the controller (and estimator) of
    the model's reproduce target with the harness."""
    if args.model not in EXPORT_DESIGNS:
        parser.exit(2, f"nhcontrol export-c: --controller is available for {sorted(EXPORT_DESIGNS)} "
                       f"(their reproduce targets build tracking controllers), not {args.model!r}; for "
                       "your own model design the controller in Python and call its export_c(out) "
                       "(docs/guide/c_export.md)\n")
    try:
        from .applications import ball_plate_control as bpc

        setup = bpc.ball_plate_nmpc_setup()
        ctrl = bpc.ball_plate_controller(setup, args.controller)
        steps = args.steps
        est = None
        if args.estimator is not None:
            n_est = steps if steps is not None else int(getattr(ctrl, "steps", 0) or 125)
            est = bpc.ball_plate_estimator(setup, args.estimator, n_est + 1, ctrl)
        meta = ctrl.export_c(args.out, estimator=est, steps=steps, force=args.force)
    except (NhcontrolError, OSError) as exc:
        if _traceback_wanted(parser):
            raise
        parser.exit(2, f"nhcontrol export-c: {_one_line(exc, args)}\n")
    print(json.dumps({"controller": meta["controller"], "estimator": meta["estimator"],
                      "files": meta["files"]}, indent=1))
    print(f"Build and run with: make -C {args.out} && {args.out}/nhc_loop < lines.jsonl",
          file=sys.stderr)
    return 0


def _export_c(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from .interop.c_export import export_c, resolve_model, resolve_partition

    if getattr(args, "controller", None) is not None:
        return _export_controller(parser, args)
    if getattr(args, "estimator", None) is not None:
        parser.exit(2, "nhcontrol export-c: --estimator needs --controller (the harness closes the "
                       "loop through a controller)\n")
    try:
        inputs = ([s.strip() for s in args.inputs.split(",") if s.strip()]
                  if args.inputs is not None else None)
        model, module = resolve_model(args.model, inputs)
        meta = export_c(model, args.out, resolve_partition(args.partition, module), force=args.force)
    except (NhcontrolError, OSError) as exc:
        if _traceback_wanted(parser):
            raise
        parser.exit(2, f"nhcontrol export-c: {_one_line(exc, args)}\n")
    print(json.dumps({k: meta[k] for k in ("model", "n", "m", "l", "k", "ns", "states", "work_doubles",
                                           "memory_bytes", "files")}, indent=1))
    print(f"Build and check with: make -C {args.out} && echo '{{\"x\": [...], ...}}' | {args.out}/nhc_check",
          file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; ``-v`` logs on standard error for this call only."""
    import logging

    parser = build_parser()
    args = parser.parse_args(argv)
    from ._util.log import enable_console_logging

    root = logging.getLogger("nhcontrol")
    level = root.level
    handler = enable_console_logging(int(args.verbose) + int(getattr(args, "verbose_sub", 0)))
    try:
        return _main(parser, args)
    finally:
        if handler is not None:
            root.removeHandler(handler)
            root.setLevel(level)


def _check_environment(parser: argparse.ArgumentParser) -> None:
    """Every ``NHCONTROL_*`` setting with a value outside its range stops the command at once, in
    one line naming the variable, the value and the accepted range (never ignored until the code
    that reads it happens to run)."""
    from ._util.blas import configured_limit
    from ._util.memory import ENV_VAR as MAX_BYTES, allocation_limit
    from ._util.progress import _disable
    from ._util.work import iteration_limit
    from .compiled.cache import _default_dir, _lock_timeout
    from .compiled.cbackend import requested_backend

    checks = [iteration_limit, _disable, configured_limit, _lock_timeout, requested_backend,
              _default_dir]
    if os.environ.get(MAX_BYTES, "").strip():
        checks.append(allocation_limit)
    problems = []
    for check in checks:
        try:
            check()
        except NhcontrolError as exc:
            problems.append(str(exc))
    if problems:
        parser.exit(2, "nhcontrol: " + " ".join("; ".join(problems).split()) + "\n")


def _main(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    _traceback_wanted(parser)
    _check_environment(parser)
    if args.command is None:
        parser.print_help()
        return 0
    if args.command == "targets":
        for name, (_, desc) in TARGETS.items():
            print(f"{name:20s} {desc}")
        return 0
    if args.command == "export-c":
        return _export_c(parser, args)
    options = _target_options(parser, args)     # before any import of the target
    module = load(args.target)
    address = getattr(args, "address", None)
    if address:
        problem = _unreachable(address)
        if problem:
            parser.exit(2, f"nhcontrol: cannot reach the Dask scheduler at --address {address} ({problem}); "
                           f"start it there with `dask scheduler` (and workers with `dask worker "
                           f"{address}`), fix the address, or leave out --address to run on this "
                           f"machine\n")
    try:
        return _run(parser, args, module, options)
    except (NhcontrolError, OSError) as exc:
        if _traceback_wanted(parser):
            raise
        parser.exit(2, f"nhcontrol: reproduce {args.target} failed: {_one_line(exc, args)}\n")
    return 2  # pragma: no cover - parser.exit raises


def _traceback_wanted(parser: argparse.ArgumentParser) -> bool:
    """``$NHCONTROL_TRACEBACK``: 1 shows the traceback, 0 or unset the one-line error."""
    raw = os.environ.get("NHCONTROL_TRACEBACK", "")
    if raw.strip() in ("", "0"):
        return False
    if raw.strip() == "1":
        return True
    parser.exit(2, f"nhcontrol: NHCONTROL_TRACEBACK={raw!r} is not valid; accepted: 1 (full "
                   f"tracebacks), 0 or unset (one-line errors)\n")
    return False  # pragma: no cover - parser.exit raises


def _unreachable(address: str, timeout: float = 5.0) -> str | None:
    """Why a TCP connection to the scheduler ``address`` fails (None when it opens, or when the
    address is not plain TCP: those are left to dask)."""
    import socket
    from urllib.parse import urlsplit

    target = address if "://" in address else f"tcp://{address}"
    parts = urlsplit(target)
    if parts.scheme != "tcp":
        return None
    try:
        host, port = parts.hostname, parts.port
    except ValueError as exc:
        return f"not a host:port address: {exc}"
    if not host or port is None:
        return "not a host:port address (e.g. tcp://10.0.0.5:8786)"
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except OSError as exc:
        return exc.strerror or str(exc) or type(exc).__name__


_HINTS = {errno.ENOSPC: "free disk space, or write elsewhere with --out",
          errno.EDQUOT: "free space within your disk quota, or write elsewhere with --out",
          errno.EACCES: "choose a folder you can write with --out",
          errno.EPERM: "choose a folder you can write with --out",
          errno.EROFS: "the file system is read-only: choose another folder with --out",
          errno.ECONNREFUSED: "check that the Dask scheduler at --address is running and reachable"}


def _one_line(exc: BaseException, args: argparse.Namespace) -> str:
    """What went wrong, where, and what to do, on one line (no traceback)."""
    if isinstance(exc, OSError) and not isinstance(exc, NhcontrolError):
        what = exc.strerror or str(exc) or type(exc).__name__
        where = exc.filename or (args.out if getattr(args, "out", None) is not None else None)
        hint = _HINTS.get(exc.errno or -1, "check the path and try again (set NHCONTROL_TRACEBACK=1 "
                                           "for the full traceback)")
        text = f"{what}" + (f" ({where})" if where else "") + f"; {hint}"
    elif isinstance(exc, NhcontrolError) and getattr(args, "command", None) == "export-c":
        text = str(exc)
    else:
        text = f"{exc} ({type(exc).__name__}; set NHCONTROL_TRACEBACK=1 for the full traceback)"
    return " ".join(text.split())


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace, module: object, options: dict) -> int:
    log = logging.getLogger("nhcontrol.cli")
    log.info("reproduce %s%s: started", args.target, " (quick)" if args.quick else "")
    t_run = time.perf_counter()
    if args.out is not None:
        try:
            args.out.mkdir(parents=True, exist_ok=True)
            probe = args.out / ".nhcontrol-write-test"
            probe.write_text("")
            probe.unlink()
        except OSError as exc:
            parser.exit(2, f"nhcontrol: cannot write figures to --out {str(args.out)!r}: "
                           f"{exc.strerror or exc}; choose a writable folder\n")
    if args.out is None:
        with figure_format(args.fmt), figure_size(args.size), house_style():
            result = _to_jsonable(module.run(out=None, quick=args.quick, **options))
    else:
        # the target draws into a staging folder next to --out; its files and the JSON (last)
        # then go through the one writer of user folders (nhcontrol._util.staging.write_tree:
        # staged, renamed in at the end, a manifest of what it wrote, no file it did not write
        # overwritten without --force, no symbolic link followed): an interrupted or failed run
        # leaves --out as it was
        from ._util.staging import staging_folder, write_tree

        staging = staging_folder(args.out)
        try:
            with figure_format(args.fmt), figure_size(args.size), house_style():
                result = _to_jsonable(module.run(out=staging, quick=args.quick, **options))
            result = _relocate(result, str(staging), str(args.out))
            files: dict[str, str | bytes] = dict(_collect(staging))
            files[f"{args.target}.json"] = json.dumps(result, indent=2)
            write_tree(args.out, files, force=args.force, what=f"reproduce {args.target}")
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    log.info("reproduce %s: finished in %.1f s", args.target, time.perf_counter() - t_run)
    if not args.json:
        print(module.summary(result))
        print(_end_of_run(args, result))
    else:
        json.dump(result, sys.stdout, indent=2)
        sys.stdout.write("\n")
        sys.stderr.write(_end_of_run(args, result) + "\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
