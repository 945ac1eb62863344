"""A ``sympy.physics.mechanics`` model as a [`MultibodySystem`][nhcontrol.modeling.MultibodySystem]
([`from_sympy_mechanics()`][nhcontrol.interop.from_sympy_mechanics]).

nhcontrol works in absolute coordinates (thesis Ch. 2): every body has its centre of mass
``r_G(x)`` and orientation ``R(x)`` as functions of the coordinates ``x``, the constraints are
``C(x) = 0`` and ``B(x) ẋ + b = 0`` in the coordinate velocities ``ẋ``, and the loads enter as
``Qa``. A sympy.mechanics model is translated term by term:

* coordinates ``x = q`` (independent and dependent, in the model's order), velocities ``ẋ = q̇``;
* generalized speeds ``u`` are eliminated with the kinematic differential equations (solved for
  ``u``, linear in ``q̇``), so nonholonomic constraints written in ``u`` become ``B(q) q̇ + b = 0``;
* each moving ``RigidBody`` (a body fixed in the inertial frame, the ground of
  ``System.from_newtonian``, is left out): mass, central inertia in its own frame, ``r_G = masscenter.pos_from(origin)``
  and ``R = N.dcm(frame)`` (body axes in the inertial frame ``N``); a ``Particle`` has zero
  inertia and no orientation;
* each load — a ``Force`` on a point ``P`` or a ``Torque`` on a frame ``B`` (also the loads of the
  model's actuators, through ``to_loads()``) — becomes the generalized force
  ``Q_j = F · ∂v_P/∂q̇_j`` or ``T · ∂ω_B/∂q̇_j`` with sympy's own velocity ``v_P`` and angular
  velocity ``ω_B`` (Kane's partial velocities in ``q̇``): a force on a contact point acts on the
  material point whose velocity sympy defines;
* holonomic constraints stay ``C(q) = 0``; the names of inputs and parameters are the user's.

Anything without a translation — a body of another type, a load that is neither a force on a
point nor a torque on a frame, an actuator without ``to_loads()``, a point whose position from
the origin is not defined, a time-dependent symbol that is neither a coordinate, a speed nor
a declared input, a parameter without a value — raises
`InteropError` (`nhcontrol._util.errors`) naming it.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from .._util.errors import InteropError
from .._util.names import check_name

__all__ = ["from_sympy_mechanics"]


def _name(s: Any) -> str:
    import sympy as sp

    if isinstance(s, sp.Symbol):
        return s.name
    if isinstance(s, sp.core.function.AppliedUndef):
        return type(s).__name__
    if isinstance(s, str):
        return s
    raise InteropError(f"{s!r} is not a symbol or a dynamicsymbol (give inputs and parameters as "
                       f"sympy symbols, dynamicsymbols or names)")


def _parts(model: Any) -> dict:
    """Frame, origin, q, u, kinematic equations, bodies, loads, constraints of a System or a KanesMethod."""
    import sympy as sp
    from sympy.physics import mechanics as me

    if isinstance(model, me.System):
        loads = list(model.loads)
        for act in model.actuators:
            try:
                loads += list(act.to_loads())
            except Exception as exc:       # noqa: BLE001 - any failure is "cannot translate"
                raise InteropError(f"the actuator {act!r} ({type(act).__name__}) cannot be translated: its "
                                   f"to_loads() fails ({exc}); replace it by forces/torques") from exc
        return {"frame": model.frame, "origin": model.fixed_point, "q": list(model.q), "u": list(model.u),
                "kdes": list(model.kdes), "bodies": list(model.bodies), "loads": loads,
                "holonomic": list(model.holonomic_constraints),
                "nonholonomic": list(model.nonholonomic_constraints)}
    if isinstance(model, me.KanesMethod):
        if len(getattr(model, "_qdep", [])) or len(getattr(model, "_udep", [])):
            raise InteropError("a KanesMethod with dependent coordinates or speeds: its velocity "
                               "constraints mix the derivatives of the configuration constraints with "
                               "the nonholonomic ones; build the model as a sympy.physics.mechanics.System "
                               "(holonomic_constraints and nonholonomic_constraints apart) and pass that")
        if model.bodies is None:
            raise InteropError("the KanesMethod has no bodies yet: call kanes_equations(bodies, loads) "
                               "first, or pass a System")
        kd = model.kindiffdict()
        kdes = [qd - rhs for qd, rhs in kd.items()]
        return {"frame": model._inertial, "origin": None, "q": list(model.q), "u": list(model.u),
                "kdes": kdes, "bodies": list(model.bodies), "loads": list(model.loads or []),
                "holonomic": [], "nonholonomic": []}
    raise InteropError(f"from_sympy_mechanics needs a sympy.physics.mechanics System (or KanesMethod), "
                       f"got {type(model).__name__}")


def _fixed(body: Any, N: Any) -> bool:
    """A body that does not move in the inertial frame ``N`` (the ground)."""
    from sympy.physics import mechanics as me

    try:
        still = body.masscenter.vel(N) == 0
    except ValueError:
        return False
    if isinstance(body, me.RigidBody):
        still = still and (body.frame == N or body.frame.ang_vel_in(N) == 0)
    return bool(still)


def _find_origin(points: Iterable[Any], frame: Any) -> Any:
    """The point with zero velocity in ``frame`` connected by positions to all ``points``."""
    seen: set = set()
    stack = list(points)
    connected = []
    while stack:
        p = stack.pop()
        if id(p) in seen:
            continue
        seen.add(id(p))
        connected.append(p)
        stack.extend(p._pos_dict.keys())
    for p in connected:
        v = p._vel_dict.get(frame)
        if v is not None and v == 0:
            return p
    raise InteropError("no fixed point (a point with velocity set to zero in the inertial frame) is "
                       "connected by positions to the bodies; pass origin=...")


def from_sympy_mechanics(model: Any, parameters: Mapping[Any, float], *, inputs: Iterable[Any] = (),
                         name: str = "sympy_mechanics", origin: Any = None) -> Any:
    """Translate a ``sympy.physics.mechanics`` model into nhcontrol's absolute formulation.

    Parameters
    ----------
    model : sympy.physics.mechanics.System or KanesMethod
        A ``System`` (bodies, loads, actuators with ``to_loads()``, kinematic differential
        equations, holonomic and nonholonomic constraints, independent and dependent
        coordinates and speeds) or a ``KanesMethod`` after ``kanes_equations`` without
        dependent coordinates or speeds (e.g. ``sympy.physics.mechanics.models``).
    parameters : mapping symbol or name -> float
        The value of every constant symbol of the model (masses, lengths, ``g`` ...); they
        become nhcontrol parameters with these defaults and the same names.
    inputs : iterable of symbols or dynamicsymbols
        The actuator symbols (e.g. ``F`` of ``dynamicsymbols('F')``), nhcontrol inputs of the
        same names.
    name : str
        The `MultibodySystem`'s name.
    origin : sympy.physics.vector.Point, optional
        The fixed point positions are measured from (default: the System's ``fixed_point``, or
        the point with zero velocity connected to the bodies).

    Returns
    -------
    MultibodySystem
        Coordinates named as the user's ``q`` (velocities ``<q>_d``), inputs and parameters
        named as the user's symbols.

    Raises
    ------
    InteropError
        A feature without translation (named in the message), a symbol without a value or
        role, kinematic equations that do not determine the speeds.

    Examples
    --------
    >>> from sympy.physics.mechanics.models import n_link_pendulum_on_cart
    >>> import sympy as sp
    >>> kane = n_link_pendulum_on_cart(1, cart_force=True, joint_torques=False)
    >>> g, l0, m0, m1 = sp.symbols("g l0 m0 m1")
    >>> from sympy.physics.mechanics import dynamicsymbols
    >>> mb = from_sympy_mechanics(kane, {g: 9.81, l0: 1.0, m0: 1.0, m1: 0.5},
    ...                           inputs=[dynamicsymbols("F")])
    >>> [str(s) for s in mb.coordinates], [str(s) for s in mb.inputs]
    (['q0', 'q1'], ['F'])
    """
    import sympy as sp
    from sympy.physics import mechanics as me

    from ..modeling import MultibodySystem

    parts = _parts(model)
    N = parts["frame"]
    t = me.dynamicsymbols._t
    q, u = parts["q"], parts["u"]
    if not q:
        raise InteropError("the model has no generalized coordinates q")
    qnames = [_name(s) for s in q]
    # every name is checked before anything is built (the rule of nhcontrol._util.names; no
    # renaming: the imported model keeps the user's names, or the import is refused)
    check_name(name, "model", error=InteropError)
    for what, names in (("coordinate", qnames), ("velocity", [f"{s}_d" for s in qnames]),
                        ("parameter", [_name(k) for k in parameters]),
                        ("input", [_name(s) for s in inputs])):
        for nm in names:
            check_name(nm, f"{what} (sympy.mechanics symbol)", model=name, error=InteropError)
    mb = MultibodySystem(name)
    xs = mb.add_coordinates(qnames)
    xs = (xs,) if isinstance(xs, sp.Symbol) else tuple(xs)
    vs = mb.velocities
    # parameters and inputs
    pvals = {_name(k): float(v) for k, v in parameters.items()}
    in_names = [_name(s) for s in inputs]
    clash = sorted(set(in_names) & set(pvals) | (set(in_names) | set(pvals)) & set(qnames))
    if clash:
        raise InteropError(f"names used twice (coordinate, input, parameter): {clash}")
    psyms: dict = {}
    if pvals:
        made = mb.add_parameters(**pvals)
        psyms = dict(zip(pvals, (made,) if isinstance(made, sp.Symbol) else made))
    usyms = {}
    if in_names:
        made = mb.add_inputs(in_names)
        usyms = dict(zip(in_names, (made,) if isinstance(made, sp.Symbol) else made))

    # symbol map: q(t) -> x, q'(t) -> xd, inputs, parameters
    qd = [s.diff(t) for s in q]
    base: dict = {}
    for s, x, v, d in zip(q, xs, vs, qd):
        base[d] = v
        base[s] = x
    for s in inputs:
        if isinstance(s, sp.core.function.AppliedUndef):
            base[s] = usyms[_name(s)]
        elif isinstance(s, sp.Symbol):
            base[s] = usyms[s.name]
    for k in parameters:
        if isinstance(k, sp.Symbol):
            base[k] = psyms[k.name]
        elif isinstance(k, str):
            base[sp.Symbol(k)] = psyms[k]
    # generalized speeds from the kinematic differential equations: u = G(q) q̇ + g(q)
    if u:
        try:
            Au, bu = sp.linear_eq_to_matrix([sp.expand(e) for e in parts["kdes"]], list(u))
        except (ValueError, sp.PolynomialError) as exc:
            raise InteropError(f"the kinematic differential equations are not linear in the speeds "
                               f"{[_name(s) for s in u]} ({exc})") from exc
        if Au.shape != (len(u), len(u)) or sp.simplify(Au.det()) == 0:
            raise InteropError(f"the kinematic differential equations ({len(parts['kdes'])}) do not "
                               f"determine the {len(u)} speeds {[_name(s) for s in u]}")
        usol = Au.LUsolve(bu)
        speed = {s: sp.simplify(e) for s, e in zip(u, usol)}
        speed.update({s.diff(t): sp.diff(e, t) for s, e in speed.items()})
    else:
        speed = {}

    def conv(expr: Any, what: str) -> Any:
        e = sp.sympify(expr)
        if speed:
            e = e.xreplace(speed)
        e = e.xreplace(base)
        leftover = sorted({_name(f) for f in e.atoms(sp.core.function.AppliedUndef)} |
                          {str(d) for d in e.atoms(sp.Derivative)})
        if leftover:
            raise InteropError(f"{what} depends on the time-dependent symbols {leftover}, which are neither "
                               f"coordinates, speeds nor declared inputs: add them to inputs=...")
        free = {s.name for s in e.free_symbols} - {s.name for s in (*xs, *vs, *usyms.values(),
                                                                    *psyms.values())}
        free.discard("t")
        if free:
            raise InteropError(f"{what} has symbols without a value: {sorted(free)}; give them in "
                               f"parameters={{...}} (or declare them as inputs)")
        return e

    def vec(v: Any, what: str) -> sp.Matrix:
        return sp.Matrix([conv(c, what) for c in v.to_matrix(N)])

    # bodies
    if origin is None:
        origin = parts["origin"]
    if origin is None:
        origin = _find_origin([b.masscenter for b in parts["bodies"]], N)
    for b in parts["bodies"]:
        bname = str(b.name)
        if _fixed(b, N):
            continue            # the ground (e.g. System.from_newtonian's body): no motion, no terms
        check_name(bname, "body (sympy.mechanics body)", model=name, error=InteropError)
        if isinstance(b, me.RigidBody):
            frame = b.frame
            try:
                inertia = b.central_inertia.to_matrix(frame)
            except Exception as exc:       # noqa: BLE001
                raise InteropError(f"the inertia of body {bname!r} cannot be expressed in its frame ({exc})") from exc
            try:
                R = N.dcm(frame)
            except Exception as exc:       # noqa: BLE001
                raise InteropError(f"the orientation of body {bname!r} (frame {frame}) relative to the "
                                   f"inertial frame {N} is not defined ({exc})") from exc
            R = sp.Matrix([[conv(e, f"the orientation of body {bname!r}") for e in row]
                           for row in R.tolist()])
            I = sp.Matrix([[conv(e, f"the inertia of body {bname!r}") for e in row] for row in inertia.tolist()])
        elif isinstance(b, me.Particle):
            R, I = None, sp.zeros(3, 3)
        else:
            raise InteropError(f"body {bname!r} is a {type(b).__name__}; only RigidBody and Particle are translated")
        try:
            r = b.masscenter.pos_from(origin)
        except ValueError as exc:
            raise InteropError(f"the position of the mass centre {b.masscenter} of body {bname!r} from the "
                               f"origin {origin} is not defined; nhcontrol's absolute formulation needs "
                               f"positions as functions of the coordinates (set_pos/locatenew chains, e.g. "
                               f"coordinates for a contact point)") from exc
        mb.add_body(bname, mass=conv(b.mass, f"the mass of body {bname!r}"), inertia=I,
                    position=vec(r, f"the position of body {bname!r}"), orientation=R)

    # loads as generalized forces with sympy's (partial) velocities in q̇
    Qtot = sp.zeros(len(xs), 1)
    for load in parts["loads"]:
        loc, vecv = (load.location, load.vector) if hasattr(load, "location") else tuple(load)
        if isinstance(loc, me.Point):
            try:
                vel = loc.vel(N)
            except ValueError as exc:
                raise InteropError(f"the velocity of point {loc} (a force acts on it) is not defined in {N} "
                                   f"({exc})") from exc
            what = f"the force on point {loc}"
        elif isinstance(loc, me.ReferenceFrame):
            vel = loc.ang_vel_in(N)
            what = f"the torque on frame {loc}"
        else:
            raise InteropError(f"the load {load!r} acts on a {type(loc).__name__}; only forces on points "
                               f"and torques on frames are translated")
        if vel == 0:
            continue            # a load on a fixed point or frame does no work
        F = vec(vecv, what)
        V = vec(vel, f"the velocity in {what}")
        Qtot += V.jacobian(sp.Matrix(vs)).T * F
    if any(e != 0 for e in Qtot):
        mb.add_generalized_force(Qtot)

    # constraints
    for i, c in enumerate(parts["holonomic"]):
        mb.add_holonomic(conv(c, f"holonomic constraint {i}"), name=f"hol{i}")
    for i, c in enumerate(parts["nonholonomic"]):
        e = sp.expand(conv(c, f"nonholonomic constraint {i}"))
        b0 = e.xreplace({v: 0 for v in vs})
        mb.add_nonholonomic(e, name=f"nh{i}", affine=bool(sp.simplify(b0) != 0))
    return mb
