"""CasADi export (nhcontrol.interop): the SymPy->CasADi converter and to_casadi's two routes.

CasADi's Jacobian of the exported minimal-state dynamics ``f(X, u, p)`` at a random admissible
point (a random state on the constraint manifold, random inputs; accelerations and multipliers
from the index-1 system) equals nhcontrol's third procedure at that point (to 1e-10 relative),
on the benchmark bicycle (m = 4 holonomic constraints solved by CasADi's Newton rootfinder) and
the torque-steered single-track skate (affine speed constraint).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

ca = pytest.importorskip("casadi", reason="the CasADi interop needs the optional dependency casadi "
                                          "(pip install 'nhcontrol[casadi]')")
sp = pytest.importorskip("sympy")

from nhcontrol._util.errors import InteropError  # noqa: E402
from nhcontrol.interop import casadi_function, sympy_to_casadi, to_casadi  # noqa: E402


def _rel(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b))))


# --------------------------------------------------------------------------- converter
def test_converter_functions_match_numpy():
    a, b, c = sp.symbols("a b c")
    exprs = [sp.sin(a) * sp.cos(b) ** 3 / (1 + c ** 2), sp.atan2(a, b), sp.sqrt(c + 2), sp.exp(-a) * sp.log(c + 3),
             sp.Abs(a - b) + sp.sign(b), sp.Min(a, b, c) + sp.Max(a, c), sp.tan(a) + sp.sec(b) + sp.cot(c + 2),
             sp.Piecewise((a, a > b), (b ** 2, sp.And(c > 0, a < 0)), (c, True)), sp.Mod(a - 5, 3),
             sp.asin(a / 3) + sp.acos(b / 3) + sp.atan(c) + sp.tanh(a) + sp.sinh(b) + sp.cosh(c),
             a ** sp.Rational(3, 2) * 0 + sp.Abs(b) ** sp.Rational(-1, 2) + c ** -3 + sp.pi * sp.E,
             sp.floor(a * 2.5) + sp.ceiling(b) + sp.Heaviside(c)]
    f = casadi_function("f", [("v", [a, b, c])], [(f"y{i}", e) for i, e in enumerate(exprs)])
    rng = np.random.default_rng(3)
    for _ in range(20):
        v = rng.uniform(-1.5, 1.5, 3)
        v[2] = abs(v[2]) + 0.1
        got = [float(o) for o in f(v)]
        want = [float(e.subs({a: v[0], b: v[1], c: v[2]}).evalf(30)) for e in exprs]
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


def test_converter_shares_definitions_and_shapes():
    q = sp.symbols("q")
    w = sp.Dummy("w")
    M = sp.Matrix([[w, 0], [w * q, w ** 2]])
    x = ca.SX.sym("x")
    out = sympy_to_casadi(M, {q: x}, definitions={w: sp.sin(q)})
    assert out.shape == (2, 2)
    val = ca.Function("g", [x], [out])(0.3).full()
    np.testing.assert_allclose(val, [[math.sin(0.3), 0], [0.3 * math.sin(0.3), math.sin(0.3) ** 2]], rtol=1e-15)
    # MX values give an MX graph
    xm = ca.MX.sym("x")
    assert isinstance(sympy_to_casadi(sp.Matrix([q, q ** 2]), {q: xm}), ca.MX)


def test_converter_errors_name_the_problem():
    a, b = sp.symbols("a b")
    with pytest.raises(InteropError, match="'b' has no value"):
        sympy_to_casadi(a + b, {a: ca.SX.sym("a")})
    g = sp.Function("g")
    with pytest.raises(InteropError, match="'g'"):
        sympy_to_casadi(g(a), {a: ca.SX.sym("a")})
    with pytest.raises(InteropError, match="otherwise branch"):
        sympy_to_casadi(sp.Piecewise((a, a > 0)), {a: ca.SX.sym("a")})
    with pytest.raises(InteropError, match="not real"):
        sympy_to_casadi(a + sp.I, {a: ca.SX.sym("a")})


# --------------------------------------------------------------------------- models
@pytest.fixture(scope="module")
def bicycle():
    from nhcontrol.models import benchmark_bicycle as bb

    inputs = ("T_phi", "T_delta")
    cm = bb.model(inputs=inputs)
    ref = bb.steady_forward(cm, 4.0)
    x0 = np.asarray(ref.x(0.4))
    sym = to_casadi(bb.build(inputs=inputs), bb.PARTITION_4_172, x_guess=x0)
    ker = to_casadi(cm, bb.PARTITION_4_172, x_guess=x0, route="kernels")
    return cm, ref, sym, ker, bb.PARTITION_4_172


@pytest.fixture(scope="module")
def skate():
    from nhcontrol.models import single_track as st

    mdl = st.build("torque")
    cm = mdl.system.compile()
    part = dict(independent=["gamma"], admissible_dependent=["x", "y", "psi"], dependent=[])
    sym = to_casadi(mdl, part)
    ker = to_casadi(cm, part, route="kernels")
    X0 = np.array([0.0, 0.0, 0.0, 0.0, 0.0])
    return cm, sym, ker, part, X0


def _nhcontrol_AB(cm, part, cs, X, u):
    """nhcontrol's A, B at the point (x, ẋ, ẍ, Λ, u) that the state X and the input u define."""
    from nhcontrol import linearize
    from nhcontrol.linearization import index1_accelerations
    from nhcontrol.reference import reference_points

    x, xd = (np.asarray(v).ravel() for v in cs.coordinates_of(*cs.args(X, u)))
    xdd, lam = index1_accelerations(cm, x, xd, u)
    ref = reference_points(cm, x[None], xd[None], xdd[None], u[None], lam[None])   # admissibility checked
    res = linearize(cm, ref, part, 0.0)
    assert res.states == cs.states
    return res.A, res.B, x, xd, xdd


def test_bicycle_jacobian_equals_third_procedure(bicycle):
    cm, ref, sym, ker, part = bicycle
    rng = np.random.default_rng(11)
    X0 = sym.state(ref.x(0.4), ref.xd(0.4))
    for _ in range(2):
        X = X0 + rng.normal(0.0, 0.05, X0.size)
        u = rng.normal(0.0, 2.0, 2)
        A, B, x, xd, xdd = _nhcontrol_AB(cm, part, sym, X, u)
        As, Bs = (np.asarray(v) for v in sym.AB(*sym.args(X, u)))
        assert _rel(As, A) <= 1e-10 and _rel(Bs, B) <= 1e-10
        Ak, Bk = (np.asarray(v) for v in ker.AB(*ker.args(X, u)))
        assert _rel(Ak, A) <= 1e-12 and _rel(Bk, B) <= 1e-12
        # f itself: [ẋ_ai, ẍ_ai, ẋ_ad]
        want = np.concatenate([xd[list(sym.ai)], xdd[list(sym.ai)], xd[list(sym.ad)]])
        assert _rel(np.asarray(sym.f(*sym.args(X, u))).ravel(), want) <= 1e-12
        assert _rel(np.asarray(ker.f(*ker.args(X, u))).ravel(), want) <= 1e-13


def test_bicycle_steady_matrix_at_5ms(bicycle):
    """At the steady forward motion the export reproduces the Table 4.2 eigenvalues (5 m/s);
    t = 0.32 s at 5 m/s is the configuration of the Newton guess (0.4 s at 4 m/s)."""
    from nhcontrol.models import benchmark_bicycle as bb

    cm, _, sym, _, _ = bicycle
    ref = bb.steady_forward(cm, 5.0)
    x = np.asarray(ref.x(0.32))
    A, _ = sym.AB(*sym.args(sym.state(x, ref.xd(0.32)), np.zeros(2)))
    got_x = np.asarray(sym.coordinates_of(*sym.args(sym.state(x, ref.xd(0.32)), np.zeros(2)))[0]).ravel()
    assert np.max(np.abs(got_x - x)) < 1e-13     # Newton found the reference's x_d
    ev = np.linalg.eigvals(np.asarray(A))
    for want in (-14.0783896928, -0.3228664290, complex(-0.7753418822, 4.4648677138)):
        assert np.min(np.abs(ev - want)) < 1e-8


def test_skate_jacobian_equals_third_procedure(skate):
    cm, sym, ker, part, X0 = skate
    rng = np.random.default_rng(5)
    for _ in range(3):
        X = X0 + rng.normal(0.0, 0.3, X0.size)
        u = rng.normal(0.0, 5.0, 1)
        p = sym.p
        A, B, *_ = _nhcontrol_AB(cm, part, sym, X, u)
        As, Bs = (np.asarray(v) for v in sym.AB(X, u, p))
        assert _rel(As, A) <= 1e-10 and _rel(Bs, B) <= 1e-10
        Ak, Bk = (np.asarray(v) for v in ker.AB(X, u))
        assert _rel(Ak, A) <= 1e-12 and _rel(Bk, B) <= 1e-12


def test_skate_sx_graph(skate):
    """m = 0: f is one SX graph (for acados' explicit expressions), callable with SX and MX
    symbols; it equals the compiled-kernels route, and so do its Jacobians."""
    cm, sym, ker, part, X0 = skate
    assert isinstance(sym.f_sx.sx_in(0), ca.SX) and isinstance(sym.f.sx_in(0), ca.SX)
    Xm, um, pm = ca.MX.sym("X", 5), ca.MX.sym("u", 1), ca.MX.sym("p", 7)
    fm = ca.Function("fm", [Xm, um, pm], [sym.f(Xm, um, pm)])
    Xs0, us0, ps0 = ca.SX.sym("X", 5), ca.SX.sym("u", 1), ca.SX.sym("p", 7)
    fsx = ca.Function("fsx", [Xs0, us0, ps0], [sym.f(Xs0, us0, ps0)])
    X1, u1 = X0 + 0.1, np.array([2.0])
    want = np.asarray(ker.f(X1, u1)).ravel()
    for fn in (fm, fsx):
        assert _rel(np.asarray(fn(X1, u1, sym.p)).ravel(), want) <= 1e-10
    xs, xds = sym.coordinates_of(Xs0, us0, ps0)
    assert isinstance(xs, ca.SX) and isinstance(xds, ca.SX)
    rng = np.random.default_rng(8)
    Xs, us, ps = ca.SX.sym("X", 5), ca.SX.sym("u", 1), ca.SX.sym("p", 7)
    expr = sym.f_sx(Xs, us, ps)
    J = ca.Function("J", [Xs, us, ps], [ca.jacobian(expr, Xs), ca.jacobian(expr, us)])
    for _ in range(3):
        X, u = X0 + rng.normal(0, 0.3, 5), rng.normal(0, 5.0, 1)
        # symbolic vs numeric QR of the saddle-point matrix (masses 1573 kg and 20 kg, inertias
        # 2873 and 1 kg m²: condition 6.7e6 at such points): agreement to round-off of that size
        assert _rel(np.asarray(sym.f_sx(X, u, sym.p)).ravel(), np.asarray(ker.f(X, u)).ravel()) <= 1e-10
        A, B = (np.asarray(v) for v in J(X, u, sym.p))
        Ak, Bk = (np.asarray(v) for v in ker.AB(X, u))
        assert _rel(A, Ak) <= 1e-10 and _rel(B, Bk) <= 1e-10


def test_bicycle_has_no_sx_graph(bicycle):
    assert bicycle[2].f_sx is None         # m = 4: x_d needs the rootfinder


def test_symbolic_route_parameters_are_inputs(skate):
    """p is an input of the symbolic route: a changed speed V changes ẋ as the kernels do."""
    cm, sym, _, part, X0 = skate
    p = sym.p.copy()
    p[list(sym.parameters).index("V")] = 7.0
    x, xd = (np.asarray(v).ravel() for v in sym.coordinates_of(X0, [0.0], p))
    assert xd[0] == pytest.approx(7.0, rel=1e-14)
    ker7 = to_casadi(cm, part, route="kernels", p={"V": 7.0})
    np.testing.assert_allclose(np.asarray(ker7.f(X0, [1.0])).ravel(),
                               np.asarray(sym.f(X0, [1.0], p)).ravel(), rtol=1e-13, atol=1e-13)


def test_compiled_model_finds_its_system(skate, monkeypatch):
    """A compiled model compiled in this process (or by a catalogue recipe) serves the symbolic
    route; one whose symbolic model is unknown gets a clear error."""
    from nhcontrol.compiled import model as cmodel

    cm, sym, _, part, X0 = skate
    again = to_casadi(cm, part)
    np.testing.assert_array_equal(np.asarray(again.f(X0, [1.0], again.p)), np.asarray(sym.f(X0, [1.0], sym.p)))
    monkeypatch.setattr(cmodel, "_SYSTEMS", {})
    monkeypatch.setattr(cmodel, "_BUILDERS", {})
    with pytest.raises(InteropError, match="system="):
        to_casadi(cm, part)


def test_errors(skate):
    cm, _, ker, part, _ = skate
    with pytest.raises(InteropError, match="route"):
        to_casadi(cm, part, route="fast")
    with pytest.raises(InteropError, match="fixes the parameters"):
        ker.args(np.zeros(5), [0.0], p=np.ones(7))
    from nhcontrol.models import single_track as st

    with pytest.raises(InteropError, match="enter its nonholonomic"):
        to_casadi(st.build("rigid_kinematic"), dict(independent=[], dependent=[],
                                                    admissible_dependent=["x", "y", "psi", "phi_R", "phi_F"]))
