"""A sympy.mechanics operating point (``op_point``) as an nhcontrol `Reference`.

sympy linearizes at ``KanesMethod.linearize(op_point=[{q: …, u: …, u': …, F: …}, values])``;
[`reference_from_op_point()`][nhcontrol.interop.reference_from_op_point] reads the same
dictionaries and returns the `Reference` nhcontrol linearizes about, so both linearizations use
one description of the point:

* coordinates ``q`` give ``x0``; velocities come from ``q'`` entries, or from the speeds ``u``
  through the model's kinematic differential equations (pass the sympy model);
* accelerations (``q''`` or ``u'``) zero or absent: a steady motion
  ``Reference.constant_velocity(cm, x0, ẋ0, u0)`` (checked: constraints, dynamics); nonzero: one
  reference point (``reference_points``) with those accelerations, the multipliers from inverse
  dynamics (Eq. (2.112));
* actuator symbols named like the model's inputs give ``u0`` (absent ones are zero); constants
  (the ``values`` dictionary) are ignored, the compiled model carries its parameters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping

import numpy as np

from .._util.errors import InteropError

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.reference import Reference

__all__ = ["reference_from_op_point"]


def _key_name(k: Any) -> tuple[str, int]:
    """``(name, order)`` of an op_point key: ``q(t)`` → ``("q", 0)``, ``q'(t)`` → ``("q", 1)``."""
    import sympy as sp

    if isinstance(k, str):
        return k, 0
    if isinstance(k, sp.Derivative):
        base, order = k.expr, sum(c for _, c in k.variable_count)
        return _key_name(base)[0], int(order)
    if isinstance(k, sp.core.function.AppliedUndef):
        return type(k).__name__, 0
    if isinstance(k, sp.Symbol):
        return k.name, 0
    raise InteropError(f"op_point key {k!r} is not a symbol, a dynamicsymbol or its derivative")


def _merge(op_point: Mapping[Any, float] | Iterable[Mapping[Any, float]]) -> dict[tuple[str, int], float]:
    dicts = [op_point] if isinstance(op_point, Mapping) else list(op_point)
    out: dict[tuple[str, int], float] = {}
    for d in dicts:
        if not isinstance(d, Mapping):
            raise InteropError(f"op_point must be a dict or a list of dicts (as KanesMethod.linearize "
                               f"takes), got {type(d).__name__}")
        for k, v in d.items():
            try:
                out[_key_name(k)] = float(v)
            except TypeError as exc:
                raise InteropError(f"op_point value of {k} must be a number, got {v!r}") from exc
    return out


def _speed_rates(model: Any, vals: dict[tuple[str, int], float], coords: list[str], order: int
                 ) -> dict[str, float]:
    """q̇ (order 1) or q̈ (order 2) from the speeds ``u`` (or ``u'``) of the op_point through
    the model's kinematic differential equations."""
    import sympy as sp
    from sympy.physics import mechanics as me

    from .sympy_mechanics import _parts

    parts = _parts(model)
    t = me.dynamicsymbols._t
    q, u = parts["q"], parts["u"]
    qnames = [_key_name(s)[0] for s in q]
    sub = {s: vals[(nm, 0)] for s, nm in zip(q, qnames) if (nm, 0) in vals}
    unknown = sp.symbols(f"_qrate0:{len(q)}")
    if order == 1:
        known = {s: vals[(_key_name(s)[0], 0)] for s in u if (_key_name(s)[0], 0) in vals}
        if len(known) < len(u):
            return {}
        eqs = [sp.sympify(e).xreplace({s.diff(t): z for s, z in zip(q, unknown)}).xreplace({**known, **sub})
               for e in parts["kdes"]]
    else:
        known = {s.diff(t): vals[(_key_name(s)[0], 1)] for s in u if (_key_name(s)[0], 1) in vals}
        if len(known) < len(u):
            return {}
        speeds = {s: vals.get((_key_name(s)[0], 0), 0.0) for s in u}
        qvel = {s.diff(t): vals.get((nm, 1), 0.0) for s, nm in zip(q, qnames)}
        eqs = []
        for e in parts["kdes"]:
            de = sp.sympify(e).diff(t).xreplace({s.diff(t, 2): z for s, z in zip(q, unknown)})
            eqs.append(de.xreplace(known).xreplace(qvel).xreplace(speeds).xreplace(sub))
    sol = sp.solve(eqs, list(unknown), dict=True)
    if len(sol) != 1:
        raise InteropError("the kinematic differential equations do not determine the coordinate "
                           f"{'velocities' if order == 1 else 'accelerations'} at the op_point")
    res = {}
    for z, nm in zip(unknown, qnames):
        v = sol[0].get(z)
        if v is None or not v.is_number:
            raise InteropError(f"the op_point does not fix the {'velocity' if order == 1 else 'acceleration'}"
                               f" of {nm!r}: give the speeds (and the values of every constant they "
                               "involve) or the derivatives q'(t) directly")
        res[nm] = float(v)
    return res


def reference_from_op_point(cm: CompiledModel, op_point: Any, model: Any = None, *,
                            p: Any = None) -> Reference:
    """The `Reference` of a sympy.mechanics ``op_point`` (module docstring).

    Parameters
    ----------
    cm : CompiledModel
        The compiled model of [`from_sympy_mechanics()`][nhcontrol.interop.from_sympy_mechanics]
        (coordinates and inputs named as the sympy symbols).
    op_point : dict or list of dicts
        As ``KanesMethod.linearize(op_point=...)`` takes: values of ``q``, ``q'`` or ``u``,
        ``u'`` (or ``q''``), and the actuators; number values (substitute the constants first).
    model : sympy.physics.mechanics.System or KanesMethod, optional
        Needed when the op_point gives speeds ``u`` rather than ``q'``: its kinematic
        differential equations map them to the coordinate velocities.
    p : parameters, optional
        Of the compiled model (default its defaults).

    Returns
    -------
    Reference
        ``steady=True`` (constant velocity) when the accelerations are zero or absent, else one
        reference point at ``t = 0``.

    Raises
    ------
    InteropError
        A coordinate without a value, velocities that cannot be determined, unknown keys.
    ReferenceMotionError
        The point violates the constraints, or a zero-acceleration point is not a steady motion
        of the model (from the reference's own checks).
    """
    from ..reference import Reference
    from ..reference.family import reference_points

    vals = _merge(op_point)
    coords = list(cm.coordinates)
    missing = [c for c in coords if (c, 0) not in vals]
    if missing:
        raise InteropError(f"the op_point gives no value to the coordinates {missing}; it must fix every "
                           f"coordinate {coords}")
    x0 = np.array([vals[(c, 0)] for c in coords])
    if all((c, 1) in vals for c in coords):
        xd = {c: vals[(c, 1)] for c in coords}
    elif model is not None:
        xd = _speed_rates(model, vals, coords, 1)
        if not xd:
            raise InteropError("the op_point gives neither every q' nor every speed u of the model")
    elif not any((c, 1) in vals for c in coords):
        xd = {c: 0.0 for c in coords}
        known = set(coords) | set(cm.inputs)
        extra = sorted(nm for (nm, o) in vals if o == 0 and nm not in known)
        if extra:
            raise InteropError(f"the op_point has values for {extra}, which are neither coordinates "
                               f"{coords} nor inputs {list(cm.inputs)}; if they are speeds, pass the sympy "
                               "model (model=...) so that its kinematic equations map them to q'")
    else:
        raise InteropError(f"the op_point gives the velocities of only some coordinates "
                           f"{[c for c in coords if (c, 1) in vals]}; give all q' or pass model= with the speeds")
    xd0 = np.array([xd[c] for c in coords])
    vals.update({(c, 1): xd[c] for c in coords})          # q̇ for the derivative of the kinematics
    if all((c, 2) in vals for c in coords):
        xdd0 = np.array([vals[(c, 2)] for c in coords])
    elif model is not None and any(o == 1 and (nm, 1) in vals and nm not in coords for nm, o in vals):
        rates = _speed_rates(model, vals, coords, 2)
        xdd0 = np.array([rates.get(c, 0.0) for c in coords]) if rates else np.zeros(len(coords))
    else:
        xdd0 = np.zeros(len(coords))
    u0 = np.array([vals.get((nm, 0), 0.0) for nm in cm.inputs])
    if not np.any(xdd0):
        return Reference.constant_velocity(cm, x0, xd0, u=u0 if u0.size else None, p=p)
    return reference_points(cm, x0[None], xd0[None], xdd0[None], u0[None] if u0.size else None, p=p)
