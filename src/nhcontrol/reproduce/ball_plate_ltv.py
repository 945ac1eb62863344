"""Linear time-varying systems of the ball-plate case (thesis Sect. 8.4.2–8.4.5).

These assemble [`nhcontrol.systems.LTVSystem`][nhcontrol.systems.LTVSystem] objects from the model
of
[`nhcontrol.models.ball_plate`][nhcontrol.models.ball_plate] (which, like every model, is built
only from ``modeling``
and ``reference``): the 8-state system of Eq. (8.74) from the third numerical procedure or in
closed form (Eqs. (8.75)-(8.76)), and the 7-state controllable formulation of Sect. 8.4.5.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._util.errors import LinearSystemError
from .._util.validation import readonly
from ..linearization import Partition, linearize
from ..models.ball_plate import (INPUTS, LTV_STATES, PARTITION_8_72, REDUCED_STATES, CircularMotion,
                                 closed_form_matrices, motion_from_reference, spin_reduction)
from ..systems import LTVSystem, restrict

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.reference import Reference

__all__ = ["AGREEMENT_TOL", "closed_form_ltv", "ltv_system", "controllable_formulation"]

AGREEMENT_TOL = 1e-8
"""Largest relative difference accepted between nhcontrol.linearize and the closed form."""


def closed_form_ltv(motion: CircularMotion):
    """The LTV system (8.74) in closed form, with exact derivatives of every order.

    Returns
    -------
    LTVSystem
        States [`LTV_STATES`][nhcontrol.models.ball_plate.LTV_STATES], inputs
        [`INPUTS`][nhcontrol.models.ball_plate.INPUTS], ``period = 2π/|ω|``, vectorized.
    """
    last: dict[str, Any] = {}

    def AB(t: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        # integrators ask for A(t) then B(t) at the same scalar t: evaluate once
        if np.ndim(t) == 0:
            key = float(t)
            if last.get("t") != key:
                A, B = closed_form_matrices(motion, key)
                last["t"], last["AB"] = key, (readonly(A), readonly(B))
            return last["AB"]
        return closed_form_matrices(motion, t)

    return LTVSystem(lambda t: AB(t)[0], lambda t: AB(t)[1],
                     states=LTV_STATES, inputs=INPUTS, period=motion.period,
                     dA=lambda t, k: closed_form_matrices(motion, t, k)[0],
                     dB=lambda t, k: closed_form_matrices(motion, t, k)[1], vectorized=True)


# ---------------------------------------------------------------------------- product path
def ltv_system(cm: CompiledModel, ref: Reference, *, method: Literal["linearize", "closed_form"] = "linearize"):
    """8-state LTV system of Eq. (8.74) from the third numerical procedure (Sect. 4.2.3, 8.1).

    ``A(t)``, ``B(t)`` are [`nhcontrol.linearize()`][nhcontrol.linearize] with
    [`PARTITION_8_72`][nhcontrol.models.ball_plate.PARTITION_8_72] evaluated at
    ``t`` (vectorized). Their time derivatives (for Silverman--Meadows, Eq. (8.87)) are the exact
    ones of [`closed_form_matrices()`][nhcontrol.models.ball_plate.closed_form_matrices]; before
    returning, ``A``, ``B`` are compared with the
    closed form at three times (relative tolerance
    [`AGREEMENT_TOL`][nhcontrol.reproduce.ball_plate_ltv.AGREEMENT_TOL]) so both describe the
    same system.

    Parameters
    ----------
    cm : CompiledModel
    ref : Reference
        From `circular_motion()`.
    method : {"linearize", "closed_form"}, default "linearize"
        ``"linearize"``: every evaluation of ``A(t)``, ``B(t)`` calls the third procedure (about
        5 ms per call). ``"closed_form"``: after the agreement check, evaluate
        [`closed_form_matrices()`][nhcontrol.models.ball_plate.closed_form_matrices] instead (about
        100 times faster; use it for Gramians,
        discretization over long horizons and MPC).

    Returns
    -------
    LTVSystem
        States [`LTV_STATES`][nhcontrol.models.ball_plate.LTV_STATES] (``X̃ = [ψ̃, φ̃, θ̃, ω̃_ψ,
        ω̃_φ, ω̃_θ, x̃_C, ỹ_C]``), inputs
        ``alpha, beta``, ``period = 2π/|ω|``.

    Raises
    ------
    ReferenceMotionError
        ``ref`` is not a circular motion of the model.
    LinearSystemError
        The linearization disagrees with the closed form (a modelling inconsistency).
    """
    if method not in ("linearize", "closed_form"):
        raise LinearSystemError(f"method must be 'linearize' or 'closed_form', got {method!r}")
    mo = motion_from_reference(cm, ref)
    part = Partition.from_dict(PARTITION_8_72)
    T = mo.period
    probe = np.array([0.0, 0.29 * T, 0.71 * T])
    res = linearize(cm, ref, part, t=probe)
    if tuple(res.states) != LTV_STATES:
        raise LinearSystemError(f"unexpected state order {res.states} from linearize; expected {LTV_STATES}")
    Ac, Bc = closed_form_matrices(mo, probe)
    for name, got, want in (("A", res.A, Ac), ("B", res.B, Bc)):
        err = float(np.max(np.abs(got - want)) / (1.0 + np.max(np.abs(want))))
        if not err <= AGREEMENT_TOL:
            raise LinearSystemError(
                f"{name}(t) of the third procedure differs from the closed form of Eqs. (8.75)-(8.76) by "
                f"{err:.3g} (relative, tolerance {AGREEMENT_TOL:g}); the model is not the quasi-static "
                "ball-plate model of Sect. 8.4.1")

    if method == "closed_form":
        return closed_form_ltv(mo)

    def A(t):
        return linearize(cm, ref, part, t=t, check=False).A

    def B(t):
        return linearize(cm, ref, part, t=t, check=False).B

    return LTVSystem(A, B, states=LTV_STATES, inputs=INPUTS, period=T,
                     dA=lambda t, k: closed_form_matrices(mo, t, k)[0],
                     dB=lambda t, k: closed_form_matrices(mo, t, k)[1], vectorized=True)


def controllable_formulation(cm: CompiledModel, ref: Reference, *,
                             method: Literal["linearize", "closed_form"] = "linearize"):
    """7-state LTV system without the conserved spin: controllable (Sect. 8.4.5).

    ``Ż = A_r(t) Z + B_r(t) ũ`` with ``A_r = S A P``, ``B_r = S B`` (see `SpinReduction`),
    ``Z = [ψ̃, φ̃, θ̃, ω̃_φ, ω̃_θ, x̃_C, ỹ_C]``: the restriction of Eq. (8.74) to the
    perturbations that keep the spin of the reference (``c = 0``). A perturbation with
    ``c ≠ 0`` enters as the known drift ``S A e_spin c`` and cannot be removed by any input.

    Parameters
    ----------
    cm : CompiledModel
    ref : Reference
        From `circular_motion()`.
    method : {"linearize", "closed_form"}
        Source of ``A(t)``, ``B(t)``, see
        [`ltv_system()`][nhcontrol.reproduce.ball_plate_ltv.ltv_system].

    Returns
    -------
    LTVSystem
        States [`REDUCED_STATES`][nhcontrol.models.ball_plate.REDUCED_STATES], inputs ``alpha,
        beta``, ``period = 2π/|ω|``; derivatives
        exact (from [`closed_form_matrices()`][nhcontrol.models.ball_plate.closed_form_matrices]).
        Map to/from the 8-state deviation with
        [`spin_reduction()`][nhcontrol.models.ball_plate.spin_reduction] (``Z = S X̃``, ``X̃ = P Z
        + e_spin c``).

    Notes
    -----
    Library route (no ``reproduce``): ``red = ball_plate.spin_reduction(cm, ref)`` and
    ``nhcontrol.systems.restrict(LTVSystem.from_linearization(cm, ref, ball_plate.PARTITION_8_72),
    red.S, red.P, states=red.states)``; this function is that with the exact derivatives of the
    closed form.
    """
    red = spin_reduction(cm, ref)
    return restrict(ltv_system(cm, ref, method=method), red.S, red.P, states=REDUCED_STATES)
