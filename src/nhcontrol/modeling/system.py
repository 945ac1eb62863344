"""The symbolic model builder [`MultibodySystem`][nhcontrol.modeling.MultibodySystem] (thesis Ch. 2, absolute coordinates).

A model is described by coordinates ``x`` (n) and their velocity symbols,
parameters (symbols with default values), inputs ``u`` (k), rigid bodies
(mass, inertia tensor in the body frame at the centre of mass ``G``,
position ``r_G(x, u)`` and orientation ``R(x, u)``), holonomic constraints
``C(x, u) = 0`` (m), nonholonomic constraints ``B(x, u) ẋ = 0`` or, affine,
``B(x, u) ẋ + b(x, u) = 0`` (l; inputs in them bring their rates, ``D ẍ = Q_d − E u̇``), explicit time through a clock coordinate
([`MultibodySystem.add_clock()`][nhcontrol.modeling.MultibodySystem.add_clock]) and applied
loads.  [`MultibodySystem.equations()`][nhcontrol.modeling.MultibodySystem.equations] derives the
Newton--Euler form
``M(x,u) ẍ + Dᵀ(x,u) Λ = Q(x, ẋ, u)`` of Eqs. (2.98)--(2.110) and (8.1).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np
import sympy as sp

from .._util.errors import ModelError
from .._util.names import check_name
from .simplify import angular_velocity_jacobian

if TYPE_CHECKING:  # pragma: no cover
    from ..compiled import CompiledModel
    from .equations import EquationsOfMotion

DERIVATION_VERSION = "nhcontrol-newton-euler-2"
"""Bumped whenever the derivation changes what it produces (part of the cache key)."""


@dataclass(frozen=True, eq=False)
class Body:
    """A rigid body of a [`MultibodySystem`][nhcontrol.modeling.MultibodySystem] (created by [`MultibodySystem.add_body()`][nhcontrol.modeling.MultibodySystem.add_body]).

    Attributes
    ----------
    name : str
    mass : sympy expression
        ``m_i``.
    inertia : sympy.ImmutableMatrix, shape (3, 3)
        ``Ī_Gi``, inertia tensor at ``G`` in the body frame (Eq. (2.93)).
    position : sympy.ImmutableMatrix, shape (3, 1)
        ``r_Gi(x, u)`` in the global frame.
    orientation : sympy.ImmutableMatrix, shape (3, 3)
        ``R_i(x, u)``, body-to-global components (Eq. (2.27)).
    index : int
        Position in the model's body list.
    """

    name: str
    mass: sp.Expr
    inertia: sp.ImmutableMatrix
    position: sp.ImmutableMatrix
    orientation: sp.ImmutableMatrix
    index: int

    def __repr__(self) -> str:
        return f"Body({self.name!r})"


@dataclass(frozen=True)
class Constraint:
    """A holonomic (``kind='holonomic'``) or nonholonomic constraint as given by the user."""

    name: str
    kind: str
    expr: sp.Expr
    affine: bool = False


@dataclass(frozen=True, eq=False)
class Load:
    """An applied load: ``kind`` in {'gravity', 'force', 'torque', 'spring', 'damper', 'generalized'}."""

    kind: str
    data: tuple


def _as_vector3(value: Any, what: str) -> sp.ImmutableMatrix:
    try:
        mat = sp.Matrix(value)
    except (TypeError, ValueError, sp.SympifyError) as exc:
        raise ModelError(f"{what} must be a 3-vector (sympy Matrix or sequence of 3 expressions), "
                         f"got {value!r}: {exc}") from exc
    if mat.shape == (1, 3):
        mat = mat.T
    if mat.shape != (3, 1):
        raise ModelError(f"{what} must be a 3-vector of shape (3, 1), got shape {mat.shape}")
    return sp.ImmutableMatrix(mat)


def _as_matrix3(value: Any, what: str) -> sp.ImmutableMatrix:
    try:
        mat = sp.Matrix(value)
    except (TypeError, ValueError, sp.SympifyError) as exc:
        raise ModelError(f"{what} must be a 3x3 sympy Matrix, got {value!r}: {exc}") from exc
    if mat.shape != (3, 3):
        raise ModelError(f"{what} must have shape (3, 3), got {mat.shape}")
    return sp.ImmutableMatrix(mat)


def _skew(v: sp.MatrixBase) -> sp.Matrix:
    """``ṽ`` with ``ṽ w = v × w``."""
    return sp.Matrix([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])


def _vee(W: sp.MatrixBase) -> sp.Matrix:
    """Inverse of `_skew()` applied to a skew-symmetric matrix."""
    return sp.Matrix([W[2, 1], W[0, 2], W[1, 0]])


class MultibodySystem:
    """Builder of a constrained multibody model in absolute coordinates.

    Parameters
    ----------
    name : str
        Model name (used in messages and in the kernel cache).

    Notes
    -----
    The builder is the only mutable object of the pipeline; `compile()`
    turns it into an immutable [`CompiledModel`][nhcontrol.compiled.CompiledModel].
    Inputs ``u`` may enter positions and orientations; velocities are obtained
    by differentiating with respect to ``x`` only, ``d(·)/dt = ∂(·)/∂x ẋ``
    (quasi-static inputs, Sect. 8.1).

    Examples
    --------
    >>> import sympy as sp
    >>> from nhcontrol.modeling import MultibodySystem, rot_z
    >>> mb = MultibodySystem("pendulum")
    >>> x, y, th = mb.add_coordinates("x y theta")
    >>> L, m, g = mb.add_parameters(L=1.0, m=1.0, g=9.81)
    >>> _ = mb.add_body("bar", mass=m, inertia=sp.diag(0, 0, m * L**2 / 12),
    ...                 position=[x, y, 0], orientation=rot_z(th))
    >>> mb.add_gravity(g, direction=(0, -1, 0))
    >>> mb.add_holonomic(x - L / 2 * sp.sin(th), name="pin_x")
    >>> mb.add_holonomic(y + L / 2 * sp.cos(th), name="pin_y")
    >>> eom = mb.equations()
    >>> eom.D.shape
    (2, 3)
    """

    def __init__(self, name: str) -> None:
        self.name = check_name(name, "model")
        self._coords: list[sp.Symbol] = []
        self._vels: list[sp.Symbol] = []
        self._params: list[sp.Symbol] = []
        self._defaults: dict[str, float] = {}
        self._inputs: list[sp.Symbol] = []
        self._states: list[sp.Symbol] = []
        self._rates: dict[sp.Symbol, sp.Expr] = {}
        self._bodies: list[Body] = []
        self._constraints: list[Constraint] = []
        self._loads: list[Load] = []
        self._problems: list[str] = []
        self._kin_cache: dict[tuple[str, int], Any] = {}
        self._eom: EquationsOfMotion | None = None
        self._clock: sp.Symbol | None = None
        self._outputs: list[tuple[str, sp.Expr]] = []

    # ------------------------------------------------------------------ symbols
    @staticmethod
    def _split_names(names: str | Sequence[str]) -> list[str]:
        if isinstance(names, str):
            return [s for s in names.replace(",", " ").split() if s]
        return [str(s) for s in names]

    def _check(self, name: Any, kind: str) -> str:
        """``name`` when it may reach generated sources (`nhcontrol._util.names`), else ModelError."""
        return check_name(name, kind, model=self.name)

    def _changed(self) -> None:
        self._eom = None

    def add_coordinates(self, names: str | Sequence[str]) -> sp.Symbol | tuple[sp.Symbol, ...]:
        """Add generalized coordinates ``x`` and their velocity symbols ``<name>_d``.

        Parameters
        ----------
        names : str or sequence of str
            Space/comma separated names, e.g. ``"x y z psi phi theta"``.

        Returns
        -------
        sympy.Symbol or tuple of sympy.Symbol
            The new coordinate symbols in ``x`` order (a single Symbol when one
            name is given, as ``sympy.symbols`` does).
        """
        new = []
        split = self._split_names(names)
        for nm in split:
            self._check(nm, "coordinate")
            self._check(f"{nm}_d", "velocity")
        for nm in split:
            q, qd = sp.Symbol(nm), sp.Symbol(f"{nm}_d")
            self._coords.append(q)
            self._vels.append(qd)
            new.append(q)
        if not new:
            raise ModelError(f"add_coordinates needs at least one name, got {names!r}")
        self._changed()
        return new[0] if len(new) == 1 else tuple(new)

    def add_parameters(self, **defaults: float) -> sp.Symbol | tuple[sp.Symbol, ...]:
        """Add parameters as symbols with default numeric values.

        Parameters
        ----------
        **defaults : float
            ``name=value`` in kernel order, e.g. ``r=0.3, m=2.0``.

        Returns
        -------
        sympy.Symbol or tuple of sympy.Symbol
            A single Symbol for one parameter, else a tuple in the given order.

        Raises
        ------
        ModelError
            If a default is not a finite real number.
        """
        new = []
        for nm in defaults:
            self._check(nm, "parameter")
        for nm, val in defaults.items():
            try:
                fval = float(val)
            except (TypeError, ValueError) as exc:
                raise ModelError(f"default value of parameter {nm!r} must be a real number, "
                                 f"got {val!r}") from exc
            if not np.isfinite(fval):
                raise ModelError(f"default value of parameter {nm!r} must be finite, got {fval}")
            s = sp.Symbol(nm)
            if nm in self._defaults:
                self._problems.append(f"parameter {nm!r} was added twice (defaults "
                                      f"{self._defaults[nm]} and {fval}); add it once")
            else:
                self._params.append(s)
            self._defaults[nm] = fval
            new.append(s)
        if not new:
            raise ModelError("add_parameters needs at least one name=value pair")
        self._changed()
        return new[0] if len(new) == 1 else tuple(new)

    def add_inputs(self, names: str | Sequence[str]) -> sp.Symbol | tuple[sp.Symbol, ...]:
        """Add inputs ``u`` (k of them) that may enter positions, orientations and loads (Eq. (8.1)).

        Returns
        -------
        sympy.Symbol or tuple of sympy.Symbol
        """
        new = [sp.Symbol(self._check(nm, "input")) for nm in self._split_names(names)]
        if not new:
            raise ModelError(f"add_inputs needs at least one name, got {names!r}")
        self._inputs.extend(new)
        self._changed()
        return new[0] if len(new) == 1 else tuple(new)

    def add_first_order_states(self, names: str | Sequence[str]) -> sp.Symbol | tuple[sp.Symbol, ...]:
        """Add first-order auxiliary states ``z`` (pressures, spool positions, motor currents ...).

        A state obeys ``ż = H(x, ẋ, z, u)`` (Eqs. (7.12)-(7.13), set with
        [`set_rates()`][nhcontrol.modeling.MultibodySystem.set_rates]) and may enter the loads
        like an input (Eq. (7.11), ``Q(x, ẋ, z)``): the mechanical kernels treat it as one of the
        model's inputs, so ``∂Q/∂z`` is the exact ``dQ_du`` column of the compiled model; the
        rates and their partial derivatives are compiled by
        [`compile_rates()`][nhcontrol.compiled.compile_rates].

        Returns
        -------
        sympy.Symbol or tuple of sympy.Symbol
        """
        new = [sp.Symbol(self._check(nm, "first-order state")) for nm in self._split_names(names)]
        if not new:
            raise ModelError(f"add_first_order_states needs at least one name, got {names!r}")
        taken = {str(v) for v in (*self._coords, *self._vels, *self._params, *self._inputs)}
        dup = [str(v) for v in new if str(v) in taken]
        if dup:
            raise ModelError(f"first-order state name(s) {dup} already used in model {self.name!r}; "
                             f"choose new names")
        self._inputs.extend(new)
        self._states.extend(new)
        self._changed()
        return new[0] if len(new) == 1 else tuple(new)

    def set_rates(self, rates: Mapping[sp.Symbol, Any]) -> None:
        """Set the rate equations ``ż = H(x, ẋ, z, u)`` of first-order states.

        Parameters
        ----------
        rates : mapping
            ``{state symbol: expression}``; expressions may use coordinates, velocities, the
            first-order states, the other inputs and the parameters.

        Raises
        ------
        ModelError
            A key that is not a first-order state, or an expression with unknown symbols or
            accelerations.
        """
        allowed = {*self._coords, *self._vels, *self._params, *self._inputs}
        for z, expr in rates.items():
            if z not in self._states:
                raise ModelError(f"set_rates: {z!r} is not a first-order state of model "
                                 f"{self.name!r} (states: {[str(v) for v in self._states]}); add it "
                                 f"with add_first_order_states")
            e = sp.sympify(expr)
            bad = sorted(str(a) for a in e.free_symbols - allowed)
            if bad:
                raise ModelError(f"the rate of {z} contains unknown symbol(s) {bad}; rates may use "
                                 f"coordinates, velocities, states, inputs and parameters")
            self._rates[z] = e
        self._changed()

    @property
    def first_order_states(self) -> tuple[sp.Symbol, ...]:
        """First-order states ``z`` (a subset of [`inputs`][nhcontrol.modeling.MultibodySystem.inputs], in order)."""
        return tuple(self._states)

    @property
    def rates(self) -> tuple[sp.Expr, ...]:
        """Rate expressions ``H`` in the order of the first-order states.

        Raises
        ------
        ModelError
            If a state has no rate.
        """
        missing = [str(z) for z in self._states if z not in self._rates]
        if missing:
            raise ModelError(f"first-order state(s) {missing} of model {self.name!r} have no rate "
                             f"equation; call set_rates({{state: expression}})")
        return tuple(self._rates[z] for z in self._states)

    @property
    def coordinates(self) -> tuple[sp.Symbol, ...]:
        """Coordinate symbols ``x`` (n,)."""
        return tuple(self._coords)

    @property
    def velocities(self) -> tuple[sp.Symbol, ...]:
        """Velocity symbols ``ẋ`` named ``<coord>_d`` (n,)."""
        return tuple(self._vels)

    @property
    def parameters(self) -> tuple[sp.Symbol, ...]:
        """Parameter symbols in kernel order."""
        return tuple(self._params)

    @property
    def defaults(self) -> dict[str, float]:
        """Copy of the parameter defaults ``{name: value}``."""
        return {s.name: self._defaults[s.name] for s in self._params}

    @property
    def inputs(self) -> tuple[sp.Symbol, ...]:
        """Input symbols ``u`` (k,)."""
        return tuple(self._inputs)

    @property
    def bodies(self) -> tuple[Body, ...]:
        return tuple(self._bodies)

    @property
    def constraints(self) -> tuple[Constraint, ...]:
        return tuple(self._constraints)

    @property
    def loads(self) -> tuple[Load, ...]:
        return tuple(self._loads)

    @property
    def holonomic(self) -> tuple[Constraint, ...]:
        """Holonomic constraints ``C_i`` (m) in order."""
        return tuple(c for c in self._constraints if c.kind == "holonomic")

    @property
    def nonholonomic(self) -> tuple[Constraint, ...]:
        """Nonholonomic constraints ``B_i ẋ`` (l) in order."""
        return tuple(c for c in self._constraints if c.kind == "nonholonomic")

    @property
    def n(self) -> int:
        return len(self._coords)

    @property
    def m(self) -> int:
        return len(self.holonomic)

    @property
    def l(self) -> int:  # noqa: E743 -- thesis symbol
        return len(self.nonholonomic)

    @property
    def ninputs(self) -> int:
        return len(self._inputs)

    @property
    def clock(self) -> sp.Symbol | None:
        """The clock coordinate added by [`add_clock()`][nhcontrol.modeling.MultibodySystem.add_clock], or None."""
        return self._clock

    @property
    def dof(self) -> float:
        """Degrees of freedom ``n − m − l/2``, without the clock.

        Each holonomic constraint removes a coordinate, each nonholonomic one half a degree of
        freedom (a velocity, not a position): the count of the road-vehicle review,
        ``3N − g − h/2`` for ``N`` planar bodies with ``g`` geometric and ``h`` kinematic
        constraints, here with ``n`` absolute coordinates. A clock (`add_clock()`) is time, not
        a degree of freedom: its coordinate and its constraint ``τ̇ − 1 = 0`` are not counted
        (``n − 1 − m − (l − 1)/2``).
        """
        c = 1 if self._clock is not None else 0
        return (self.n - c) - self.m - (self.l - c) / 2

    @property
    def first_order_odes(self) -> int:
        """Number of first-order equations of the minimal mechanical state, ``2(n − m) − l``
        (Eq. (4.123), ``6N − 2g − h``), plus one per first-order state (`first_order_states`);
        without the clock (`add_clock()`), whose equation ``τ̇ = 1`` is time itself (the
        linearization state keeps its deviation: one more entry, see `add_clock()`)."""
        c = 1 if self._clock is not None else 0
        return 2 * (self.n - c - self.m) - (self.l - c) + len(self._states)

    # ------------------------------------------------------------------ bodies
    def add_body(self, name: str, *, mass: Any, inertia: Any, position: Any,
                 orientation: Any | None = None) -> Body:
        """Add a rigid body.

        Parameters
        ----------
        name : str
        mass : sympy expression
            ``m_i``.
        inertia : (3, 3) sympy Matrix
            ``Ī_Gi``, inertia tensor at the centre of mass in the body frame.
        position : (3,) sequence or (3, 1) Matrix
            ``r_Gi(x, u)`` in the global frame.
        orientation : (3, 3) sympy Matrix, optional
            ``R_i(x, u)`` (body to global, e.g. from
            [`euler_rotation()`][nhcontrol.modeling.euler_rotation]);
            identity when omitted (a particle or a translating body).

        Returns
        -------
        Body
        """
        R = sp.eye(3) if orientation is None else orientation
        self._check(name, "body")
        body = Body(name=str(name), mass=sp.sympify(mass),
                    inertia=_as_matrix3(inertia, f"inertia of body {name!r}"),
                    position=_as_vector3(position, f"position of body {name!r}"),
                    orientation=_as_matrix3(R, f"orientation of body {name!r}"),
                    index=len(self._bodies))
        self._bodies.append(body)
        self._changed()
        return body

    def body(self, name: str) -> Body:
        """Return the body called ``name``."""
        for b in self._bodies:
            if b.name == name:
                return b
        raise ModelError(f"model {self.name!r} has no body {name!r}; bodies: "
                         f"{[b.name for b in self._bodies]}")

    def _check_body(self, body: Body | None, allow_ground: bool = False) -> None:
        if body is None and allow_ground:
            return
        if not isinstance(body, Body) or body.index >= len(self._bodies) or self._bodies[body.index] is not body:
            raise ModelError(f"{body!r} is not a body of model {self.name!r}; pass the object returned "
                             f"by add_body" + (" or None for the ground" if allow_ground else ""))

    # ------------------------------------------------------------------ constraints
    def add_holonomic(self, expr: Any, name: str | None = None) -> None:
        """Add a holonomic constraint ``C_i(x, u) = 0`` (Eq. (2.66)).

        Parameters
        ----------
        expr : sympy expression
        name : str, optional
            Defaults to ``"C<i>"``.
        """
        nm = self._check(name, "holonomic constraint") if name is not None else f"C{self.m}"
        self._constraints.append(Constraint(nm, "holonomic", sp.sympify(expr)))
        self._changed()

    def add_nonholonomic(self, expr: Any, name: str | None = None, *, affine: bool = False) -> None:
        """Add a nonholonomic constraint ``B_i(x, u) ẋ = 0`` (Eq. (2.67)), or with
        ``affine=True`` ``B_i(x, u) ẋ + b_i(x, u) = 0``.

        Parameters
        ----------
        expr : sympy expression
            Linear in the velocity symbols `velocities` (homogeneous unless ``affine``);
            ``B_i`` is extracted by differentiation, ``b_i`` is ``expr`` at ``ẋ = 0``;
            linearity is checked by `validate()`.
        name : str, optional
            Defaults to ``"B<i>"``.
        affine : bool, default False
            Allow a velocity-free term ``b_i(x, u)`` (e.g. a prescribed speed
            ``cos ψ ẋ + sin ψ ẏ − V = 0``, or ``− u_V`` with the speed an input); explicit
            time enters through a clock coordinate (`add_clock()`): ``b_i(x, u, τ)``.

        Notes
        -----
        Inputs in ``B_i`` or ``b_i`` make their rates enter the acceleration level,
        ``D ẍ = Q_d − E u̇`` with ``E = ∂(B ẋ + b)/∂u`` (`CompiledModel.E`); give the rates with
        ``ud=`` to ``forward_dynamics`` and to ``Reference.from_functions``, and ``linearize``
        returns their matrix ``B_rate`` (docs/theory/road_vehicles.md, "Inputs in the
        constraints").
        """
        nm = self._check(name, "nonholonomic constraint") if name is not None else f"B{self.l}"
        self._constraints.append(Constraint(nm, "nonholonomic", sp.sympify(expr), bool(affine)))
        self._changed()

    def add_clock(self, name: str = "tau") -> sp.Symbol:
        """Add a clock: a coordinate ``τ`` with the affine constraint ``τ̇ − 1 = 0`` (named ``"clock"``).

        Along every admissible motion ``τ(t) = t − t0 + τ(0)``; simulate with ``τ(0) = t0`` and
        ``τ̇(0) = 1`` and ``τ`` *is* the time. Any expression written in ``τ`` is then an
        explicit function of time: rheonomic constraints ``B(x, τ) ẋ + b(x, τ) = 0`` (add them
        with ``affine=True``) and ``C(x, τ) = 0``, positions ``r_G(x, τ)`` and loads
        ``Q(x, ẋ, u, τ)``. The Newton–Euler route needs nothing new: ``τ`` is a coordinate, so
        ``Q_d = −d(D ẋ + b)/dt`` contains ``∂b/∂τ τ̇ = ∂b/∂τ`` and the third procedure's
        ``∂(D v + b)/∂x`` the column ``∂b/∂τ`` exactly (docs/theory/road_vehicles.md, Sect.
        "Rheonomic constraints through a clock", derived there).

        The clock is not a degree of freedom: `dof` and `first_order_odes` leave out its
        coordinate and its constraint. In a linearization ``τ`` is always an ``x_ad``
        coordinate (its velocity is fixed by the clock constraint); its deviation obeys
        ``δτ̇ = 0``, so the row of ``A`` is zero and ``δτ ≡ 0`` from ``δτ(0) = 0``: one extra
        zero eigenvalue, one of the ``l`` spurious ones. Its column holds the explicit time
        derivatives ``∂(·)/∂t`` and multiplies ``δτ ≡ 0``.

        Parameters
        ----------
        name : str, default "tau"
            Name of the clock coordinate (its velocity is ``<name>_d``).

        Returns
        -------
        sympy.Symbol
            The clock coordinate ``τ``.

        Raises
        ------
        ModelError
            If the model already has a clock, or ``name`` is already used.
        """
        if self._clock is not None:
            raise ModelError(f"model {self.name!r} already has the clock {self._clock.name!r}; one "
                             f"clock is enough (use it in every time-dependent expression)")
        nm = self._check(name, "clock")
        taken = {str(v) for v in (*self._coords, *self._vels, *self._params, *self._inputs)}
        if nm in taken or f"{nm}_d" in taken:
            raise ModelError(f"clock name {nm!r} (velocity {nm}_d) is already used in model "
                             f"{self.name!r}; choose another name, e.g. add_clock('clock_t')")
        tau = self.add_coordinates(nm)
        self._constraints.append(Constraint("clock", "nonholonomic", self._vels[-1] - 1, True))
        self._clock = tau
        self._changed()
        return tau

    # ------------------------------------------------------------------ outputs
    def add_output(self, name: str | Sequence[str], expr: Any) -> None:
        """Declare a measured output ``y_i = h_i(x, ẋ, u, z)`` (a sensor).

        The outputs ``y = h(x, ẋ, u)`` are compiled into one more generated kernel
        (``output_terms``: ``h`` and its exact partial derivatives ``∂h/∂x``, ``∂h/∂ẋ``,
        ``∂h/∂u``), and [`nhcontrol.linearize()`][nhcontrol.linearize] returns their matrices
        ``C, D`` in the minimal state ``X̃`` of the third procedure
        (docs/theory/estimation.md, "Outputs through the partition"; derived there).

        Parameters
        ----------
        name : str or sequence of str
            Output name (one per row of ``expr`` for a vector output).
        expr : sympy expression or (r, 1) Matrix
            Expression(s) of coordinates, velocities, inputs (first-order states included) and
            parameters: a camera's ball position (a coordinate or a position expression), a
            gyro (a component of `body_angular_velocity()`), an encoder angle, a wheel speed.

        Raises
        ------
        ModelError
            Unknown symbols (accelerations, undeclared names), a repeated name, or a name
            count that does not match the rows of ``expr``.

        Examples
        --------
        >>> import sympy as sp
        >>> from nhcontrol.modeling import MultibodySystem
        >>> mb = MultibodySystem("cart")
        >>> x = mb.add_coordinates("x")
        >>> mb.add_output("encoder", x)
        >>> mb.outputs
        ('encoder',)
        """
        if isinstance(expr, sp.MatrixBase):
            exprs = list(expr)
        elif isinstance(expr, (list, tuple)):
            exprs = [sp.sympify(e) for e in expr]
        else:
            exprs = [sp.sympify(expr)]
        names = [name] if isinstance(name, str) else [str(s) for s in name]
        if len(names) != len(exprs):
            raise ModelError(f"add_output got {len(names)} name(s) {names} for {len(exprs)} "
                             f"expression(s); give one name per output")
        allowed = {*self._coords, *self._vels, *self._params, *self._inputs}
        taken = {nm for nm, _ in self._outputs}
        for nm, e in zip(names, exprs):
            e = sp.sympify(e)
            self._check(nm, "output")
            if nm in taken:
                raise ModelError(f"output {nm!r} of model {self.name!r} is declared twice; "
                                 f"choose another name")
            bad = sorted(str(a) for a in e.free_symbols - allowed)
            if bad:
                raise ModelError(f"output {nm!r} contains unknown symbol(s) {bad}; outputs may use "
                                 f"coordinates {[str(q) for q in self._coords]}, their velocities "
                                 f"'<name>_d', inputs and parameters (not accelerations)")
            if e.has(sp.nan, sp.zoo, sp.oo, sp.S.NegativeInfinity):
                raise ModelError(f"output {nm!r} of model {self.name!r} contains a non-finite "
                                 f"constant (nan, inf or zoo) in {str(e)[:80]!r}; every output "
                                 f"must be finite: fix its expression")
            taken.add(nm)
            self._outputs.append((nm, e))
        self._changed()

    @property
    def outputs(self) -> tuple[str, ...]:
        """Names of the declared outputs (`add_output()`), in order."""
        return tuple(nm for nm, _ in self._outputs)

    @property
    def output_expressions(self) -> tuple[sp.Expr, ...]:
        """``h(x, ẋ, u)`` of the declared outputs, in the order of `outputs`."""
        return tuple(e for _, e in self._outputs)

    # ------------------------------------------------------------------ loads
    def add_gravity(self, g: Any, direction: Sequence[Any] = (0, 0, -1)) -> None:
        """Gravity ``m_i g e`` on every body at its centre of mass (``e`` unit direction)."""
        e = _as_vector3(direction, "gravity direction")
        self._loads.append(Load("gravity", (sp.sympify(g), e)))
        self._changed()

    def add_force(self, body: Body, force: Any, point: Any | None = None) -> None:
        """Force ``F`` (global components) acting on the material point of ``body`` at ``point``.

        Parameters
        ----------
        body : Body
        force : (3,) expressions of x, ẋ, u, parameters
        point : (3,) expressions, optional
            Global position of the point of application; the centre of mass when omitted.
        """
        self._check_body(body)
        F = _as_vector3(force, f"force on body {body.name!r}")
        P = body.position if point is None else _as_vector3(point, f"point of force on {body.name!r}")
        self._loads.append(Load("force", (body, F, P)))
        self._changed()

    def add_torque(self, body: Body, torque: Any) -> None:
        """Torque ``T`` (global components) acting on ``body``."""
        self._check_body(body)
        self._loads.append(Load("torque", (body, _as_vector3(torque, f"torque on body {body.name!r}"))))
        self._changed()

    def add_spring(self, body_a: Body | None, point_a: Any, body_b: Body | None, point_b: Any,
                   stiffness: Any, rest_length: Any = 0) -> None:
        """Linear spring between material points (``None`` = ground, then the point is fixed).

        The force on ``b`` is ``-k (L - L0) d / L`` with ``d = P_b - P_a``, ``L = |d|``;
        for ``rest_length = 0`` it is ``-k d`` (no square root).
        """
        self._check_body(body_a, True)
        self._check_body(body_b, True)
        self._loads.append(Load("spring", (body_a, _as_vector3(point_a, "spring point_a"), body_b,
                                           _as_vector3(point_b, "spring point_b"),
                                           sp.sympify(stiffness), sp.sympify(rest_length))))
        self._changed()

    def add_damper(self, body_a: Body | None, point_a: Any, body_b: Body | None, point_b: Any,
                   damping: Any) -> None:
        """Linear damper between material points: force on ``b`` is ``-c (dᵀ ḋ / L²) d``."""
        self._check_body(body_a, True)
        self._check_body(body_b, True)
        self._loads.append(Load("damper", (body_a, _as_vector3(point_a, "damper point_a"), body_b,
                                           _as_vector3(point_b, "damper point_b"), sp.sympify(damping))))
        self._changed()

    def add_generalized_force(self, Q: Any) -> None:
        """Add a generalized force vector (n,) directly to ``Qa`` (e.g. actuation ``A_τ τ``)."""
        try:
            vec = sp.Matrix(Q)
        except (TypeError, ValueError, sp.SympifyError) as exc:
            raise ModelError(f"generalized force must be a vector of {self.n} expressions: {exc}") from exc
        if vec.shape == (1, self.n):
            vec = vec.T
        if vec.shape != (self.n, 1):
            raise ModelError(f"generalized force must have shape ({self.n}, 1) (one entry per "
                             f"coordinate), got {vec.shape}")
        self._loads.append(Load("generalized", (sp.ImmutableMatrix(vec),)))
        self._changed()

    # ------------------------------------------------------------------ kinematics
    def velocity_of(self, expr: Any) -> Any:
        """Time derivative ``∂expr/∂x ẋ`` of an expression (scalar or Matrix) of ``x`` (quasi-static u)."""
        xs = sp.Matrix(self._coords)
        xd = sp.Matrix(self._vels)
        if isinstance(expr, sp.MatrixBase):
            flat = sp.Matrix(list(expr))
            out = flat.jacobian(xs) * xd
            return sp.Matrix(expr.shape[0], expr.shape[1], list(out))
        e = sp.sympify(expr)
        return sum((e.diff(q) * qd for q, qd in zip(self._coords, self._vels)), sp.S.Zero)

    def body_angular_velocity(self, body: Body) -> sp.Matrix:
        """Body-frame angular velocity ``ω̄ = vee(Rᵀ Ṙ) = G̅(x) ẋ`` (3, 1), linear in ``ẋ``."""
        return self.rotation_jacobian(body, "body") * sp.Matrix(self._vels)

    def angular_velocity(self, body: Body) -> sp.Matrix:
        """Global angular velocity ``ω = vee(Ṙ Rᵀ)`` (3, 1), linear in ``ẋ``."""
        return self.rotation_jacobian(body, "global") * sp.Matrix(self._vels)

    def rotation_jacobian(self, body: Body, frame: str = "body") -> sp.Matrix:
        """``G̅`` (``frame='body'``, ``ω̄ = G̅ ẋ``) or ``G`` (``'global'``, ``ω = G ẋ``), shape (3, n).

        Column ``j`` is ``vee(Rᵀ ∂R/∂x_j)`` resp. ``vee(∂R/∂x_j Rᵀ)``, simplified exactly with
        `angular_velocity_jacobian()` (polynomial reduction
        modulo ``sin² + cos² = 1``); unsimplified if ``R`` is not polynomial in sines and cosines.
        """
        self._check_body(body)
        if frame not in ("body", "global"):
            raise ModelError(f"frame must be 'body' or 'global', got {frame!r}")
        key = (frame, body.index, self.n)
        if key not in self._kin_cache:
            G = angular_velocity_jacobian(body.orientation, list(self._coords), frame)
            if G is None:
                R = sp.Matrix(body.orientation)
                cols = []
                for q in self._coords:
                    dR = R.diff(q)
                    W = R.T * dR if frame == "body" else dR * R.T
                    cols.append(list(_vee(W)))
                G = sp.Matrix(3, self.n, lambda a, j: cols[j][a])
            self._kin_cache[key] = G
        return self._kin_cache[key]

    def _point_jacobian(self, body: Body | None, point: sp.MatrixBase) -> sp.Matrix:
        """``∂v_P/∂ẋ`` of the material point of ``body`` at global position ``point`` (3, n)."""
        if body is None:
            return sp.zeros(3, self.n)
        xs = sp.Matrix(self._coords)
        Jr = body.position.jacobian(xs)
        rho = sp.Matrix(point) - body.position
        if all(e == 0 for e in rho):
            return sp.Matrix(Jr)
        return Jr - _skew(rho) * self.rotation_jacobian(body, "global")

    def point_velocity(self, body: Body, point: Any) -> sp.Matrix:
        """Velocity ``v_G + ω × (P - r_G)`` (3, 1) of the material point of ``body`` at global ``point``."""
        self._check_body(body)
        P = _as_vector3(point, "point")
        return self._point_jacobian(body, P) * sp.Matrix(self._vels)

    # ------------------------------------------------------------------ results
    def validate(self) -> None:
        """Check the model and raise one `ModelError` listing every problem.

        Raises
        ------
        ModelError
            Unknown symbols, nonlinear or position-only "nonholonomic" constraints,
            constraints without coordinates, ``m + l >= n``, non-symmetric or not
            positive semidefinite inertia, non-positive mass, non-orthogonal
            orientation, duplicate names.
        """
        from .validation import collect_problems

        problems = list(self._problems) + collect_problems(self)
        if problems:
            lines = "\n".join(f"  - {p}" for p in problems)
            raise ModelError(f"model {self.name!r} has {len(problems)} problem(s):\n{lines}")

    def equations(self) -> "EquationsOfMotion":
        """Derive ``M ẍ + Dᵀ Λ = Q``, ``D ẍ = Qd`` (Eqs. (2.98)--(2.117)); validates first.

        Returns
        -------
        EquationsOfMotion
        """
        if self._eom is None:
            self.validate()
            from .equations import derive_equations

            self._eom = derive_equations(self)
        return self._eom

    def description(self) -> str:
        """Canonical text description of the model (``srepr`` of everything); the cache key source."""
        parts = [DERIVATION_VERSION, "name=" + self.name,
                 "x=" + ",".join(s.name for s in self._coords),
                 "xd=" + ",".join(s.name for s in self._vels),
                 "p=" + ",".join(f"{s.name}:{self._defaults[s.name]!r}" for s in self._params),
                 "u=" + ",".join(s.name for s in self._inputs)]
        for b in self._bodies:
            parts.append("body=" + "|".join([b.name, sp.srepr(b.mass), sp.srepr(b.inertia),
                                             sp.srepr(b.position), sp.srepr(b.orientation)]))
        for c in self._constraints:
            parts.append(f"{c.kind}={c.name}|{sp.srepr(c.expr)}" + ("|affine" if c.affine else ""))
        if self._clock is not None:   # only models with a clock: other hashes are unchanged
            parts.append("clock=" + self._clock.name)
        if self._states:   # only models with first-order states: other hashes are unchanged
            parts.append("z=" + ",".join(s.name for s in self._states))
            parts.extend(f"rate={z.name}|{sp.srepr(self._rates[z])}" for z in self._states
                         if z in self._rates)
        if self._outputs:   # only models with outputs: other hashes are unchanged
            parts.extend(f"y={nm}|{sp.srepr(e)}" for nm, e in self._outputs)
        for ld in self._loads:
            items = []
            for d in ld.data:
                items.append("ground" if d is None else (f"body:{d.name}" if isinstance(d, Body) else sp.srepr(d)))
            parts.append(f"load={ld.kind}|" + "|".join(items))
        return "\n".join(parts)

    def model_hash(self) -> str:
        """sha256 of `description()` (hex)."""
        return hashlib.sha256(self.description().encode()).hexdigest()

    def compile(self, cache: bool = True, cache_dir: str | None = None,
                backend: str | None = None) -> "CompiledModel":
        """Generate (or load from the disk cache) the numeric kernels.

        Parameters
        ----------
        cache : bool
            Use the on-disk cache (``$NHCONTROL_CACHE_DIR`` or ``~/.cache/nhcontrol``).
        cache_dir : path-like, optional
            Override the cache directory.
        backend : {"c", "python"}, optional
            Kernel back-end (default ``$NHCONTROL_BACKEND``, else C when a compiler works);
            see [`compile_system`][nhcontrol.compiled.compile_system].

        Returns
        -------
        CompiledModel
        """
        from ..compiled import compile_system

        return compile_system(self, cache=cache, cache_dir=cache_dir, backend=backend)

    def __repr__(self) -> str:
        return (f"MultibodySystem({self.name!r}, n={self.n}, m={self.m}, l={self.l}, "
                f"k={self.ninputs}, bodies={[b.name for b in self._bodies]})")


__all__ = ["MultibodySystem", "Body", "Constraint", "Load", "DERIVATION_VERSION"]
