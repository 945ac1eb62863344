"""python-control controllers in [`forward_dynamics()`][nhcontrol.simulate.forward_dynamics]."""

from __future__ import annotations

import difflib
import inspect
import re
from typing import TYPE_CHECKING, Any, Callable

import control
import numpy as np
from numpy.typing import NDArray

from nhcontrol._util.errors import SolverError

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.reference import Reference

__all__ = ["as_controller"]


_DESIRED = re.compile(r"^(xd|ud)\[\d+\]$")
"""python-control's default names of the desired state and input of
``control.create_statefbk_iosystem`` (``xd[i]``, ``ud[j]``): zero in deviation coordinates."""


class _IOController:
    """``u = u0(t) + y_c`` with ``y_c`` the output of a python-control system driven by the
    deviation ``lin.deviation(ref, t, x, ẋ)`` (its inputs picked by name; the inputs
    ``xd[i]``, ``ud[j]`` of a ``create_statefbk_iosystem`` controller are held at zero)."""

    def __init__(self, sys: Any, lin: Any, ref: Reference, idx: list[int], order: list[int],
                 k: int) -> None:
        self.sys, self.lin, self.ref, self.idx, self.order, self.k = sys, lin, ref, idx, order, k
        self.xc = np.zeros(sys.nstates)

    def __call__(self, t: float, x: NDArray, xd: NDArray) -> NDArray:
        dev = np.concatenate([np.asarray(self.lin.deviation(self.ref, t, x, xd), dtype=float), [0.0]])
        y = dev[self.idx]
        out = np.asarray(self.sys.output(t, self.xc, y), dtype=float).reshape(-1)[self.order]
        if self.sys.nstates:
            self.xc = np.asarray(self.sys.dynamics(t, self.xc, y), dtype=float).reshape(-1)
        u0 = np.asarray(self.ref.u(t), dtype=float).reshape(-1) if self.k else np.zeros(0)
        return u0 + out


def as_controller(controller: Any, cm: CompiledModel, sample_time: float | None, linearization: Any,
                  reference: Reference) -> tuple[Callable[[float, NDArray, NDArray], NDArray] | None, float | None]:
    """Turn ``controller`` into ``(controller(t, x, ẋ), sample_time)`` for ``forward_dynamics``."""
    if controller is None:
        return None, sample_time
    if _is_tracking_controller(controller):
        # nhcontrol's controller objects carry their sample time; a run starts afresh
        dt = float(controller.dt)
        if sample_time is not None and abs(float(sample_time) - dt) > 1e-12 * dt:
            raise SolverError(f"sample_time={sample_time} disagrees with the controller's dt = {dt}")
        controller.reset()
        return controller, dt
    if isinstance(controller, control.InputOutputSystem):
        return _from_iosystem(controller, cm, sample_time, linearization, reference)
    if not callable(controller):
        raise SolverError(f"controller must be a callable controller(t, x, xd) -> u or a python-control "
                          f"system, got {type(controller).__name__}")
    try:
        inspect.signature(controller).bind(0.0, np.zeros(1), np.zeros(1))
    except TypeError as exc:
        raise SolverError(f"controller must accept (t, x, xd) and return the {cm.ninputs} inputs "
                          f"{list(cm.inputs)}; {controller!r} cannot be called that way ({exc}). A "
                          "python-control system is accepted too (with linearization= and reference=)"
                          ) from exc
    except ValueError:
        pass   # no signature available (builtins): trust it
    return controller, sample_time


def _is_tracking_controller(obj: Any) -> bool:
    """An nhcontrol tracking controller (``design.TrackingController`` protocol, duck-typed)."""
    return (callable(getattr(obj, "control", None)) and callable(getattr(obj, "to_iosystem", None))
            and callable(getattr(obj, "reset", None)) and hasattr(obj, "dt"))


def _from_iosystem(sys: Any, cm: CompiledModel, sample_time: float | None, lin: Any, ref: Reference
                   ) -> tuple[Callable[[float, NDArray, NDArray], NDArray], float | None]:
    name = getattr(sys, "name", type(sys).__name__)
    if lin is None or ref is None:
        raise SolverError(f"a python-control controller ({name!r}) acts on the deviation from a reference: "
                          "pass linearization=lin (its states name the controller inputs) and "
                          "reference=ref (x0, ẋ0 and the feed-forward u0)")
    states = list(lin.states)
    ins = list(sys.input_labels)
    bad = [s for s in ins if s not in states and not _DESIRED.match(s)]
    if bad:
        raise SolverError(_mismatch_message(name, bad, states))
    k = int(cm.ninputs)
    outs = list(sys.output_labels)
    if len(outs) != k:
        raise SolverError(f"controller {name!r} has {len(outs)} outputs {outs}, the model {k} inputs "
                          f"{list(cm.inputs)}")
    order = [outs.index(u) for u in cm.inputs] if set(outs) == set(cm.inputs) else list(range(k))
    discrete = control.isdtime(sys, strict=True)
    if sys.nstates and not discrete:
        raise SolverError(f"controller {name!r} is continuous with {sys.nstates} states: forward_dynamics "
                          "holds inputs between samples; discretize it (control.c2d(sys, dt)) or close "
                          "the loop with nhcontrol.simulate.to_nlsys + control.interconnect")
    if discrete:
        dt = sys.dt
        if isinstance(dt, bool) or dt is None:
            raise SolverError(f"controller {name!r} is discrete with unspecified dt = {dt!r}; give it a "
                              "numeric sampling time")
        if sample_time is not None and abs(float(sample_time) - float(dt)) > 1e-12 * float(dt):
            raise SolverError(f"sample_time={sample_time} disagrees with the controller's dt = {dt}")
        sample_time = float(dt)
    idx = [states.index(s) if s in states else len(states) for s in ins]   # xd[i], ud[j] -> 0
    return _IOController(sys, lin, ref, idx, order, k), sample_time


def _mismatch_message(name: str, bad: list[str], states: list[str]) -> str:
    """Which controller inputs match no state, the likely intended names, and how to fix it."""
    hints = []
    for b in bad:
        if b.startswith("y_") and b[2:] in states:
            hints.append(f"{b!r} -> {b[2:]!r} (outputs of to_statespace are named after the states)")
            continue
        close = difflib.get_close_matches(b, states, n=1)
        if close:
            hints.append(f"{b!r} -> {close[0]!r}?")
    near = f" Did you mean: {'; '.join(hints)}." if hints else ""
    return (f"controller {name!r} has inputs {bad} that are neither states of the linearization "
            f"{states} nor the desired-state/input inputs xd[i], ud[j] of "
            f"control.create_statefbk_iosystem.{near} The controller reads the deviation "
            "lin.deviation(ref, t, x, ẋ) by name: design it on sys = lin.to_statespace(states=[...]) "
            "(any subset of lin.states, e.g. the reduced ones) so that "
            "control.create_statefbk_iosystem(sys, K) names its inputs after the states, or rename "
            "its inputs (control.ss(..., inputs=[...]) / sys.update_names(inputs=[...]))")
