"""Reference signals for python-control controllers, in the order of a linearization's states.

A state-feedback controller made by ``control.create_statefbk_iosystem(sys, K)`` on
``sys = lin.to_statespace(...)`` has the inputs ``xd[i]`` (desired state), ``ud[j]`` (desired
input) and the plant states; it commands ``u = ud − K (x − xd)``. Driving it along a reference
motion needs ``xd(t)`` in the order of ``sys``'s states and ``ud(t)`` in the order of its
inputs: [`reference_signals()`][nhcontrol.linearization.signals.reference_signals] gives both
from a `Reference`, so no name is mapped by hand (``xd`` of a state named ``q`` is the
reference coordinate ``x0_q(t)``, of ``<q>_d`` the velocity ``ẋ0_q(t)``, Eq. (4.96)).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._util.errors import LinearSystemError
from .._util.validation import readonly

if TYPE_CHECKING:
    import control

    from nhcontrol.reference import Reference

    from .result import LinearizationResult

__all__ = ["ReferenceSignals", "reference_signals"]


@dataclass(frozen=True, eq=False)
class ReferenceSignals:
    """Desired states and inputs along a reference, as python-control signals (rows = signals).

    Attributes
    ----------
    t : (N,) ndarray
    xd : (ns, N) ndarray
        Reference values of the named states (coordinates ``x0_q(t)``, velocities ``ẋ0_q(t)``).
    ud : (k, N) ndarray
        Reference inputs ``u0(t)``.
    state_labels, input_labels : tuple of str
        The states and inputs the rows belong to.
    """

    t: NDArray[np.float64]
    xd: NDArray[np.float64]
    ud: NDArray[np.float64]
    state_labels: tuple[str, ...]
    input_labels: tuple[str, ...]

    @property
    def U(self) -> NDArray[np.float64]:
        """``[xd; ud]`` (ns + k, N): the input array of ``control.input_output_response`` for a
        closed loop whose inputs are a ``create_statefbk_iosystem`` controller's ``xd``, ``ud``."""
        return np.vstack([self.xd, self.ud])

    @property
    def labels(self) -> list[str]:
        """python-control's names of the rows of `U`: ``xd[i]`` then ``ud[j]``."""
        return ([f"xd[{i}]" for i in range(self.xd.shape[0])]
                + [f"ud[{j}]" for j in range(self.ud.shape[0])])

    def __repr__(self) -> str:
        return (f"ReferenceSignals({self.t.size} times, xd for {list(self.state_labels)}, "
                f"ud for {list(self.input_labels)})")


def reference_signals(lin: LinearizationResult, ref: Reference, t: ArrayLike,
                      states: Sequence[str] | str | control.StateSpace | None = None
                      ) -> ReferenceSignals:
    """Desired states ``xd(t)`` and inputs ``ud(t)`` along ``ref`` in a linearization's order.

    Parameters
    ----------
    lin : LinearizationResult
        Its states name the rows of ``xd`` (default) and its inputs the rows of ``ud``.
    ref : Reference
        The reference motion the linearization was made about.
    t : float or (N,) array_like
        Times.
    states : sequence of str, "reduced" or control.StateSpace, optional
        The states of the system the controller was designed on (default ``lin.states``):
        a list of names, ``"reduced"`` (``lin.reduced_states()``) or a ``StateSpace`` whose
        state labels are used (e.g. ``lin.to_statespace(states="reduced")`` or a Kalman
        decomposition's ``controllable_subsystem()``). A state ``<name>_shift`` (inputs in
        the constraints, see ``to_statespace``) takes the reference value of ``<name>``.

    Returns
    -------
    ReferenceSignals

    Raises
    ------
    LinearSystemError
        A state that is neither a coordinate of the reference nor ``<coordinate>_d``.
    """
    if states is None:
        names = list(lin.states)
    elif isinstance(states, str):
        if states != "reduced":
            raise LinearSystemError(f"states must be None, 'reduced', a list of names or a "
                                    f"StateSpace, got {states!r}")
        names = list(lin.reduced_states())
    elif hasattr(states, "state_labels"):
        names = list(states.state_labels)
    else:
        names = list(states)
    coords = list(ref.coordinates)
    tt = np.atleast_1d(np.asarray(t, dtype=float))
    X = np.atleast_2d(ref.x(tt)).reshape(tt.size, -1)
    XD = np.atleast_2d(ref.xd(tt)).reshape(tt.size, -1)
    rows = []
    for s in names:
        base = s[:-len("_shift")] if s.endswith("_shift") else s
        if base in coords:
            rows.append(X[:, coords.index(base)])
        elif base.endswith("_d") and base[:-2] in coords:
            rows.append(XD[:, coords.index(base[:-2])])
        else:
            raise LinearSystemError(f"state {s!r} is neither a coordinate of the reference {coords} nor "
                                    "'<coordinate>_d': its reference value is not known by name")
    k = len(lin.inputs)
    U = (np.atleast_2d(ref.u(tt)).reshape(tt.size, -1) if k else np.zeros((tt.size, 0)))
    return ReferenceSignals(t=readonly(tt), xd=readonly(np.array(rows).reshape(len(names), tt.size)),
                            ud=readonly(np.ascontiguousarray(U.T)), state_labels=tuple(names),
                            input_labels=tuple(lin.inputs))
