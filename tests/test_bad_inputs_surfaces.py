"""Nothing silently wrong on the newer surfaces: pickles, locks, long loops, Gramians
of constant systems, inputs in constraints, clocks, off-manifold plants, Appell maps, hydraulic
parameters, loaded files, one-coordinate orientations, the CLI and sweeps.

The catalogue (`CATALOGUE`) has the format of tests/test_bad_inputs.py: every case asserts the
error class and that the message names the culprit (the argument, parameter, field or file, and
the value where there is one). The security and hang classes have their own tests below, each
finishing within seconds.
"""

from __future__ import annotations

import gc
import os
import pickle
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from nhcontrol._util.errors import CacheError
from nhcontrol.compiled.model import _REGISTRY, load_compiled
from nhcontrol.modeling import MultibodySystem, rot_z

ROOT = Path(__file__).resolve().parents[1]


# ================================================================== 1. security: pickles
_PROBE = '''
import sympy as sp
from nhcontrol.modeling import MultibodySystem, rot_z

def probe():
    mb = MultibodySystem("pickle_probe_issue22")
    x, y, th = mb.add_coordinates("x y theta")
    xd, yd, thd = mb.velocities
    m, J = mb.add_parameters(m=1.25, J=0.125)
    mb.add_body("blade", mass=m, inertia=sp.diag(J, J, J), position=[x, y, 0], orientation=rot_z(th))
    mb.add_nonholonomic(-sp.sin(th) * xd + sp.cos(th) * yd, name="blade")
    return mb
'''
_ns: dict = {}
exec(_PROBE, _ns)   # the same model in this process and in the fresh child process
_probe = _ns["probe"]


class _Crafted:
    """What an attacker pickles: nhcontrol's own unpickling target with altered source."""

    def __init__(self, key: str, source: str) -> None:
        import hashlib
        self.args = (key, source, hashlib.sha256(source.encode()).hexdigest())

    def __reduce__(self):
        return (load_compiled, self.args)


def test_crafted_pickle_cannot_plant_code_in_the_cache(tmp_path, monkeypatch):
    """Altered source + recomputed sha256: unpickling writes nothing to the cache, and a later
    ``mb.compile()`` in a fresh process (same cache) derives its own kernels and never runs it."""
    cache = tmp_path / "cache"
    marker = tmp_path / "planted_code_ran"
    cm = _probe().compile(cache=False, backend="python")
    key, src, _sha = cm.__reduce__()[1]
    evil = src + f"\nopen({str(marker)!r}, 'a').write('ran\\n')\n"
    blob = pickle.dumps(_Crafted(key, evil))
    del cm
    gc.collect()
    _REGISTRY.pop(key, None)
    monkeypatch.setenv("NHCONTROL_CACHE_DIR", str(cache))
    loaded = pickle.loads(blob)      # runs in this process (pickles are code: documented) ...
    assert marker.exists() and loaded.source_path is None and not loaded.from_cache
    marker.unlink()
    planted = [p.name for p in cache.glob("nhc_*")] if cache.exists() else []
    assert planted == [], f"unpickling wrote {planted} into the kernel cache"   # ... but not into the cache
    del loaded
    gc.collect()
    child = _PROBE + ("\nimport numpy as np\ncm = probe().compile()\n"
                      "print(cm.from_cache, cm.M(np.array([0.1, 0.2, 0.3])).diagonal().tolist())\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), NHCONTROL_CACHE_DIR=str(cache),
               NHCONTROL_BACKEND="python")
    out = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True,
                         timeout=120, check=True).stdout.split(" ", 1)
    assert out[0] == "False"                       # derived from the equations, not from the cache
    assert not marker.exists(), "a later mb.compile() ran the crafted source"
    assert out[1].strip() == "[1.25, 1.25, 0.125]"
    assert (cache / f"nhc_{key}.py").exists()       # its own, generated kernels
    assert "planted_code_ran" not in (cache / f"nhc_{key}.py").read_text()


@pytest.mark.parametrize("key", ["../../../tmp/evil", "A" * 64, "0" * 63, 42])
def test_pickle_key_that_is_not_a_digest_is_refused(key):
    with pytest.raises(CacheError, match=r"not a sha256 hex digest.*not loaded"):
        load_compiled(key, "META = {}\n", "0" * 64)


# ================================================================== 2. hangs: the cache lock
_HOLDER = '''
import fcntl, os, socket, sys, time
d = sys.argv[1]
fd = os.open(os.path.join(d, ".nhc_lock"), os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
pid = os.getpid() if sys.argv[2] == "live" else int(sys.argv[3])   # "dead": an inherited descriptor
os.ftruncate(fd, 0)
os.pwrite(fd, (str(pid) + " " + str(time.time()) + " " + (os.uname().nodename or "localhost") + chr(10)).encode(), 0)
print("locked", flush=True)
time.sleep(60)
'''


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


@pytest.fixture
def lock_holder_process(tmp_path):
    from nhcontrol.compiled import cache as C
    d = C.ensure_private_dir(tmp_path / "locked")
    procs = []

    def start(kind: str):
        args = [sys.executable, "-c", _HOLDER, str(d), kind] + ([str(_dead_pid())] if kind == "dead" else [])
        p = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        procs.append(p)
        assert p.stdout.readline().strip() == "locked"
        return d, p
    yield start
    for p in procs:      # only the processes this fixture started
        p.kill()
        p.wait()


def test_cache_lock_held_by_a_live_process_times_out_naming_it(lock_holder_process, monkeypatch):
    from nhcontrol._util.errors import CacheLockTimeout
    from nhcontrol.compiled import cache as C
    d, proc = lock_holder_process("live")
    with pytest.raises(CacheLockTimeout) as info:
        with C._locked(d, timeout=0.3):
            pass
    text = str(info.value)
    assert f"locked by process {proc.pid} since" in text and "waited 0.3 s" in text
    assert f"kill {proc.pid}" in text and "NHCONTROL_LOCK_TIMEOUT" in text
    assert isinstance(info.value, CacheError) and isinstance(info.value, TimeoutError)
    # the public path: writing an artefact fails with the same message (not a hang) ...
    monkeypatch.setenv("NHCONTROL_LOCK_TIMEOUT", "0.2")
    with pytest.raises(CacheError, match=rf"locked by process {proc.pid}"):
        C.write_artefact(d / "nhc_x.py", "x = 1\n")
    # ... and mb.compile() into that cache still works (from memory), with one warning naming the holder
    with pytest.warns(RuntimeWarning, match=rf"locked by process {proc.pid}"):
        cm = _probe().compile(cache_dir=d, backend="python")
    assert cm.source_path is None
    np.testing.assert_allclose(cm.M([0.1, 0.2, 0.3]).diagonal(), [1.25, 1.25, 0.125])


def test_cache_lock_left_by_a_dead_process_is_taken_over(lock_holder_process):
    from nhcontrol.compiled import cache as C
    d, _proc = lock_holder_process("dead")
    holder = C.lock_holder(d)
    assert holder is not None and holder["alive"] is False
    with pytest.warns(RuntimeWarning, match=rf"took over the kernel cache lock .* process {holder['pid']}.*"
                                            r"no longer running"):
        with C._locked(d, timeout=5.0):
            assert C.lock_holder(d)["pid"] == os.getpid()
    # a lock file naming a dead process but not locked (killed holder): taken at once, no warning
    (d / C.LOCK_NAME).write_text(f"{_dead_pid()} 1700000000.0 {C._HOST}\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with C._locked(d, timeout=0.0):
            assert C.lock_holder(d)["pid"] == os.getpid()
    assert C.lock_holder(d) is None     # released: names nobody


@pytest.mark.parametrize("value", ["soon", "-1", "inf", "nan"])
def test_lock_timeout_setting_is_checked(monkeypatch, tmp_path, value):
    from nhcontrol._util.errors import ConfigurationError
    from nhcontrol.compiled import cache as C
    monkeypatch.setenv("NHCONTROL_LOCK_TIMEOUT", value)
    with pytest.raises(ConfigurationError, match=rf"NHCONTROL_LOCK_TIMEOUT='{value}' is not a finite"):
        with C._locked(C.ensure_private_dir(tmp_path / "c")):
            pass


# ================================================================== the catalogue
class Ctx:
    """Models shared by the cases (built once per module; all from the kernel cache)."""

    def __init__(self) -> None:
        from nhcontrol.models import single_track as st
        from nhcontrol.models import sleigh as sl
        self.sleigh = sl.model()
        self.track = st.build("force").system.compile()
        self.x0, self.xd0 = np.zeros(3), np.array([20.0, 0.0, 0.0])
        self._cart = None

    @property
    def cart(self):
        """x_d − u_V = 0 (an input in a constraint) and y_d − 0.1 τ = 0 (rheonomic, clock τ)."""
        if self._cart is None:
            mb = MultibodySystem("driven_cart_issue22")
            x, y, z = mb.add_coordinates("x y z")
            xd, yd, zd = mb.velocities
            uV = mb.add_inputs("u_V")
            tau = mb.add_clock()
            m = mb.add_parameters(m=1.0)
            mb.add_body("cart", mass=m, inertia=sp.zeros(3), position=[x, y, z])
            mb.add_nonholonomic(xd - uV, name="speed", affine=True)
            mb.add_nonholonomic(yd - sp.Rational(1, 10) * tau, name="drift", affine=True)
            self._cart = mb.compile()
        return self._cart


@pytest.fixture(scope="module")
def ctx() -> Ctx:
    return Ctx()


def _hold_law(k, t, x, xd, u_now):
    return np.array([0.0, 0.0, u_now[2], 0.0]), np.zeros(4)


def _piecewise(c, **kw):
    from nhcontrol.simulate import closed_loop_piecewise_linear
    args = dict(t_final=1e9, sample_time=1e-3)
    args.update(kw)
    tf = args.pop("t_final")
    return closed_loop_piecewise_linear(c.track, _hold_law, tf, c.x0, c.xd0, np.zeros(4), **args)


def _forward_sampled(c):
    from nhcontrol.simulate import forward_dynamics
    return forward_dynamics(c.track, (0.0, 1e9), c.x0, c.xd0, controller=lambda t, x, xd: np.zeros(4),
                            sample_time=1e-3)


def _ltv_sampled(c):
    import control as ct
    from nhcontrol.simulate import simulate_ltv
    return simulate_ltv(ct.ss([[0.0]], [[1.0]], [[1.0]], 0), (0.0, 1e9), [0.0],
                        controller=lambda j, t, x: [0.0], sample_time=1e-3)


def _discrete_steps(c):
    import types
    from nhcontrol.simulate import simulate_discrete
    lti = types.SimpleNamespace(Ad=np.eye(1), Bd=np.ones((1, 1)), dt=0.1)
    return simulate_discrete(lti, [0.0], steps=10 ** 12)


HANGS = [
    ("piecewise_loop_1e12_samples", lambda c: _piecewise(c),
     "SimulationInputError", [r"t_final=1e\+09, sample_time=0\.001", r"1e\+12 samples",
                              r"max_evaluations=2000000", r"shorten t_final"]),
    ("piecewise_loop_no_budget_still_bounded", lambda c: _piecewise(c, max_evaluations=None),
     "SimulationInputError", [r"1e\+12 samples", r"NHCONTROL_MAX_ITERATIONS"]),
    ("piecewise_loop_budget_small", lambda c: _piecewise(c, t_final=1.0, sample_time=0.01, max_evaluations=500),
     "SimulationInputError", [r"100 samples", r"at least 1100 right-hand-side evaluations",
                              r"max_evaluations=500"]),
    ("piecewise_loop_t_final_nan", lambda c: _piecewise(c, t_final=float("nan")),
     "SimulationInputError", [r"t_final must be finite, got nan"]),
    ("piecewise_loop_time_limit_negative", lambda c: _piecewise(c, t_final=0.1, sample_time=0.05, time_limit=-1),
     "SimulationInputError", [r"time_limit must be a positive number", r"-1"]),
    ("forward_sampled_1e12_intervals", _forward_sampled,
     "SimulationInputError", [r"forward_dynamics\(t_span=\(0, 1e\+09\), sample_time=0\.001\)",
                              r"'single_track_force'", r"1e\+12 hold intervals", r"max_evaluations"]),
    ("simulate_ltv_sampled_1e12_intervals", _ltv_sampled,
     "LinearSystemError", [r"simulate_ltv\(t_span=\(0, 1e\+09\), sample_time=0\.001\)",
                           r"1e\+12 hold intervals", r"NHCONTROL_MAX_ITERATIONS"]),
    ("sweep_axis_of_1e12_values", lambda c: __import__("nhcontrol.sweep", fromlist=["sweep"]).sweep(
        lambda a: a, {"a": range(10 ** 12)}),
     "SweepError", [r"grid axis 'a': 1e\+12 grid points", r"NHCONTROL_MAX_ITERATIONS", r"coarser grid"]),
    ("sweep_cartesian_grid_of_1e12_points", lambda c: __import__("nhcontrol.sweep", fromlist=["sweep"]).sweep(
        lambda a, b, d: a, {"a": range(10 ** 4), "b": range(10 ** 4), "d": range(10 ** 4)}),
     "SweepError", [r"the Cartesian grid a \(10000\) x b \(10000\) x d \(10000\): 1e\+12 grid points"]),
    ("monte_carlo_1e12_runs", lambda c: __import__("nhcontrol.applications.verify", fromlist=["monte_carlo"]).monte_carlo(
        lambda x: {"value": x}, {"x": 1.0}, 10 ** 12, success={"value": 2.0}),
     "MonteCarloError", [r"monte_carlo\(n=1000000000000\)", r"1e\+12 iterations"]),
    ("simulate_discrete_1e12_steps", _discrete_steps,
     "LinearSystemError", [r"simulate_discrete\(steps=1000000000000\)", r"1e\+12 iterations"]),
]


def test_piecewise_loop_projection_stops_early(ctx):
    """A budget that passes the up-front count but not the measured rate stops after 3 samples."""
    from nhcontrol._util.errors import SolverError
    with pytest.raises(SolverError, match=r"at the rate of the first 3 samples .* more than "
                                          r"max_evaluations=2300"):
        _piecewise(ctx, t_final=2.0, sample_time=0.01, max_evaluations=2300, rtol=1e-10, atol=1e-12)


# ================================================================== 3a. Gramians of constant systems
_GA = np.array([[-1.0, 2.0], [0.0, -3.0]])
_GB = np.array([[0.0], [1.0]])


def _gramian_closed_form(T: float, frame: str) -> np.ndarray:
    """The definition integrated by hand: e^{±Aσ} B = [e^{∓σ} − e^{∓3σ}, e^{∓3σ}] (eigenvectors
    [1, 0] and [1, −1] of A), each entry a sum of ∫_0^T e^{cσ} dσ = expm1(cT)/c in 50 digits."""
    import mpmath as mp
    with mp.workdps(50):
        sg = -1 if frame == "t1" else 1
        a, b = sg * 1, sg * 3

        def integral(c):
            return mp.expm1(c * T) / c
        w11 = integral(2 * a) - 2 * integral(a + b) + integral(2 * b)
        w12 = integral(a + b) - integral(2 * b)
        w22 = integral(2 * b)
        return np.array([[float(w11), float(w12)], [float(w12), float(w22)]])


def _constant_systems():
    import control as ct
    from nhcontrol.systems import LTVSystem
    return {"LTVSystem.constant": LTVSystem.constant(_GA, _GB), "StateSpace": ct.ss(_GA, _GB, np.eye(2), 0)}


@pytest.mark.parametrize("frame", ["t1", "t0"])
@pytest.mark.parametrize("T", [3.0, 10.0, 30.0, 80.0])
def test_gramian_of_constant_systems_is_exact_at_every_horizon(T, frame):
    """Issue 22: relative errors were 1e-9 (T = 3), 4e8 (T = 10), 1e61 (T = 30) in frame t0 and a
    negative diagonal at T = 80 in frame t1; now a few eps against the closed form and against
    adaptive quadrature of the definition, for both input types."""
    from nhcontrol.analysis import gramian
    exact = _gramian_closed_form(T, frame)
    sg = 1.0 if frame == "t1" else -1.0
    # composite 12-point Gauss-Legendre over panels of 0.25 s of e^{±Aσ} B Bᵀ e^{±Aᵀσ}, the
    # exponential from numpy's eigendecomposition of A
    xg, wg = np.polynomial.legendre.leggauss(12)
    edges = np.linspace(0.0, T, int(4 * T) + 1)
    mid, half = 0.5 * (edges[1:] + edges[:-1]), 0.5 * np.diff(edges)
    sigma = (mid[:, None] + half[:, None] * xg[None, :]).ravel()
    weights = (half[:, None] * wg[None, :]).ravel()
    lam, V = np.linalg.eig(_GA)
    c = np.linalg.solve(V, _GB[:, 0])
    x = np.einsum("ia,a,ka->ki", V, c, np.exp(sg * sigma[:, None] * lam[None, :]))[:, :, None]
    quad = np.einsum("k,kia,kja->ij", weights, x, x)
    np.testing.assert_allclose(quad, exact, rtol=1e-11)
    for name, sys in _constant_systems().items():
        W = gramian(sys, 0.0, T, frame=frame).W
        err = np.max(np.abs(W - exact) / np.abs(exact))
        assert err < 1e-12, f"{name}, frame {frame}, T = {T}: relative error {err:.2e}"
        assert np.all(np.diag(W) > 0)


@pytest.mark.parametrize("frame", ["t1", "t0"])
def test_gramian_of_a_constant_discrete_system_is_exact_at_long_horizons(frame):
    """DiscreteLTV of the same system (dt = 0.5, 160 steps = 80 s): the frame-t0 sum no longer
    inverts the whole transition matrix (condition number e^{160}); reference in 50 digits."""
    import mpmath as mp
    from scipy.linalg import expm
    from nhcontrol.analysis import gramian
    from nhcontrol.systems import DiscreteLTV
    dt, N = 0.5, 160
    Ad = expm(_GA * dt)
    Bd = np.linalg.solve(_GA, (Ad - np.eye(2)) @ _GB)
    d = DiscreteLTV(np.repeat(Ad[None], N, 0), np.repeat(Bd[None], N, 0), dt)
    with mp.workdps(50):
        Am, Q = mp.matrix(Ad.tolist()), mp.matrix((Bd @ Bd.T).tolist())
        Ai, P, W = Am ** -1, mp.eye(2), mp.zeros(2)
        for _ in range(N):
            if frame == "t1":
                W = Am * W * Am.T + Q
            else:
                P = P * Ai
                W = W + P * Q * P.T
        exact = np.array(W.tolist(), dtype=float)
    got = gramian(d, frame=frame).W
    assert np.max(np.abs(got - exact) / np.abs(exact)) < 1e-12


def test_gramian_that_overflows_is_an_error_not_inf():
    from nhcontrol._util.errors import LinearSystemError
    from nhcontrol.analysis import gramian
    with pytest.raises(LinearSystemError, match=r"\[0, 200\] \(frame='t0'\) overflows float64.*other frame"):
        gramian(_constant_systems()["StateSpace"], 0.0, 200.0, frame="t0")


# ================================================================== 3b, 3c. input rates, clocks
def _cart_sim(c, u, ud=None, x0=(0.0, 0.0, 0.0, 0.0), t_span=(0.0, 1.0), **kw):
    from nhcontrol.simulate import forward_dynamics
    x0 = np.asarray(x0, dtype=float)
    u0 = u.u(t_span[0]) if hasattr(u, "sample") else u(t_span[0]) if callable(u) else u
    uu = np.asarray(u0, dtype=float).reshape(-1)
    xd0 = np.array([uu[0], 0.1 * x0[3], 0.0, 1.0])
    return forward_dynamics(c.cart, t_span, x0, xd0, u=u, ud=ud, **kw)


def _reference_without_rates(c):
    from nhcontrol.reference import Reference
    ref = Reference.from_functions(c.cart, lambda t: [t ** 2 / 2, 0.05 * t ** 2, 0.0, t],
                                   lambda t: [t, 0.1 * t, 0.0, 1.0], lambda t: [1.0, 0.1, 0.0, 0.0], u=lambda t: [t], t_range=(0.0, 1.0), check=False)
    return _cart_sim(c, ref)


def _interp1d_input(c):
    from scipy.interpolate import interp1d
    tt = np.linspace(0.0, 1.0, 11)
    return _cart_sim(c, interp1d(tt, tt[None, :], kind="linear"))


def _reference_clock_late(c):
    from nhcontrol.reference import Reference
    return Reference.from_functions(c.cart, lambda t: [t ** 2 / 2, 0.05 * t ** 2, 0.0, t + 5.0],
                                    lambda t: [t, 0.1 * t, 0.0, 1.0], lambda t: [1.0, 0.1, 0.0, 0.0],
                                    u=lambda t: [t], ud=lambda t: [1.0], t_range=(0.0, 1.0))


RATES_CLOCKS = [
    ("input_in_constraint_without_rates", lambda c: _cart_sim(c, lambda t: [t]),
     "SimulationInputError", [r"\['u_V'\] enter the nonholonomic constraints of model 'driven_cart_issue22'",
                              r"no input rates ud were given", r"ud=lambda t", r"CubicSpline"]),
    ("input_in_constraint_sine_without_rates", lambda c: _cart_sim(c, lambda t: [np.sin(3 * t)]),
     "SimulationInputError", [r"\['u_V'\]", r"u_V\(0\.05\) = 0\.149"]),
    ("reference_input_without_rates", _reference_without_rates,
     "SimulationInputError", [r"\['u_V'\]", r"Reference\.from_functions\(\.\.\., u=\.\.\., ud=\.\.\.\)"]),
    ("interp1d_input_without_rates", _interp1d_input,
     "SimulationInputError", [r"\['u_V'\]", r"make_interp_spline\(t, U, k=1\)"]),
    ("step_input_in_constraint_without_breakpoints",
     lambda c: _cart_sim(c, lambda t: [0.0 if t < 0.5 else 1.0]),
     "SimulationInputError", [r"\['u_V'\]", r"breakpoints="]),
    ("clock_starts_late", lambda c: _cart_sim(c, [1.0], x0=(0.0, 0.0, 0.0, 5.0)),
     "SimulationInputError", [r"clock 'tau' of model 'driven_cart_issue22' starts at tau = 5 but t0 = 0",
                              r"5 s off", r"x0\['tau'\] = t0 = 0"]),
    ("clock_starts_early", lambda c: _cart_sim(c, [1.0], x0=(0.0, 0.0, 0.0, 0.0), t_span=(2.0, 3.0)),
     "SimulationInputError", [r"starts at tau = 0 but t0 = 2", r"-2 s off"]),
    ("reference_clock_offset", _reference_clock_late,
     "ReferenceMotionError", [r"clock 'tau' at tau = 5", r"at t = 0\b", r"Give x\(t\) with tau = t"]),
]


@pytest.mark.parametrize("kind", ["cubic", "linear"])
def test_spline_inputs_in_constraints_are_differentiated_exactly(ctx, kind):
    """Issue 22: u = t in x_d − u_V = 0 without ud gave x(1) = 0.41, x_d(1) = 0.90; a spline (or a
    piecewise-linear make_interp_spline) input is differentiated exactly: 0.5 and 1.0."""
    from scipy.interpolate import CubicSpline, make_interp_spline
    tt = np.linspace(0.0, 1.0, 11)
    u = CubicSpline(tt, tt[:, None]) if kind == "cubic" else make_interp_spline(tt, tt[:, None], k=1)
    sim = _cart_sim(ctx, u, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose([sim.x[-1, 0], sim.xd[-1, 0]], [0.5, 1.0], atol=1e-9)
    np.testing.assert_allclose(sim.x[-1, 1], 0.05, atol=1e-9)       # the rheonomic drift 0.1 τ


# ================================================================== 3e. Appell's velocity maps
def _appell(w_names, xdot_of):
    from nhcontrol.modeling.appell import appell_equations
    mb = _probe()
    x, y, th = mb.coordinates
    ws = [nm if not isinstance(nm, str) else nm.strip("'") if nm.startswith("'") else sp.Symbol(nm, real=True)
          for nm in w_names]      # "'v'": the string itself
    syms = {str(v): v for v in ws if isinstance(v, sp.Symbol)}
    return appell_equations(mb, xdot_of(x, y, th, syms, mb), ws)


APPELL = [
    ("appell_map_slips_sideways",
     lambda c: _appell(["vx", "vy", "om"], lambda x, y, th, w, mb: [w["vx"], w["vy"], w["om"]]),
     "ModelError", [r"velocity map of model 'pickle_probe_issue22' violates the nonholonomic constraint 'blade'",
                    r"must vanish for every value of the pseudo velocities \['vx', 'vy', 'om'\]",
                    r"Residual: "]),
    ("appell_map_with_lateral_pseudo_velocity",
     lambda c: _appell(["v", "s", "om"], lambda x, y, th, w, mb: [
         w["v"] * sp.cos(th) - w["s"] * sp.sin(th), w["v"] * sp.sin(th) + w["s"] * sp.cos(th), w["om"]]),
     "ModelError", [r"violates the nonholonomic constraint 'blade'", r"\['v', 's', 'om'\]"]),
    ("appell_map_wrong_heading",
     lambda c: _appell(["v", "om"], lambda x, y, th, w, mb: [w["v"] * sp.sin(th), w["v"] * sp.cos(th), w["om"]]),
     "ModelError", [r"constraint 'blade'", r"theta = "]),
    ("appell_duplicated_pseudo_velocity",
     lambda c: _appell(["v", "v"], lambda x, y, th, w, mb: [w["v"] * sp.cos(th), w["v"] * sp.sin(th), 0]),
     "ModelError", [r"pseudo_velocities of model 'pickle_probe_issue22' repeat \['v'\]"]),
    ("appell_string_pseudo_velocities",
     lambda c: _appell(["'v'", "'om'"], lambda x, y, th, w, mb: [sp.Symbol("v") * sp.cos(th),
                                                                 sp.Symbol("v") * sp.sin(th), sp.Symbol("om")]),
     "ArgumentTypeError", [r"must be sympy Symbols", r"'v', 'om'", r"sympy\.Symbol\('w', real=True\)"]),
    ("appell_pseudo_velocity_missing_from_map",
     lambda c: _appell(["v", "om", "spare"], lambda x, y, th, w, mb: [w["v"] * sp.cos(th), w["v"] * sp.sin(th),
                                                                       w["om"]]),
     "ModelError", [r"\['v', 'om', 'spare'\]", r"not independent", r"rank 2 < 3"]),
    ("appell_pseudo_velocity_is_a_coordinate",
     lambda c: _appell([_probe().coordinates[2]], lambda x, y, th, w, mb: [0, 0, th]),
     "ModelError", [r"theta \(a coordinate\)"]),
]


def test_appell_with_a_consistent_map_is_accepted():
    ae = _appell(["v", "om"], lambda x, y, th, w, mb: [w["v"] * sp.cos(th), w["v"] * sp.sin(th), w["om"]])
    assert ae.nw == 2


# ================================================================== 3d, 3f. off-manifold plants, hydraulics
def _nlsys_off_manifold(c):
    import control as ct
    from nhcontrol.simulate import to_nlsys
    plant = to_nlsys(c.sleigh)
    return ct.input_output_response(plant, np.linspace(0.0, 1.0, 5), 0, [0, 0, 0, 0.0, 1.0, 0.0])


def _fourbar(fn, **kw):
    from nhcontrol.models import hydraulic_fourbar as hf
    return getattr(hf, fn)(**kw)


def _hyd(fn, *args, **kw):
    from nhcontrol.modeling import hydraulics as hy
    return getattr(hy, fn)(*args, **kw)


def _nlsys_clock_late(c):
    import control as ct
    from nhcontrol.simulate import to_nlsys
    plant = to_nlsys(c.cart)
    return ct.input_output_response(plant, np.linspace(0.0, 1.0, 5), [[1.0] * 5],
                                    [0.0, 0.5, 0.0, 5.0, 1.0, 0.5, 0.0, 1.0])


OFF_MANIFOLD_HYDRAULICS = [
    ("nlsys_clock_not_at_the_start", _nlsys_clock_late,
     "SimulationInputError", [r"clock 'tau' of the python-control plant of model 'driven_cart_issue22'",
                              r"tau = 5 but the run starts at t = 0", r"5 s off"]),
    ("nlsys_started_off_the_constraints", _nlsys_off_manifold,
     "SimulationInputError", [r"python-control plant of model 'chaplygin_sleigh' at t = 0",
                              r"'blade_lateral'", r"consistent_initial_conditions",
                              r"params=\{'check_initial': False\}"]),
    ("fourbar_linearization_negative_bulk_modulus", lambda c: _fourbar("linearization", B_oil=-1.5e9),
     "ModelError", [r"B_oil = -1\.5e\+09 Pa \(bulk modulus of the oil\) must be > 0 Pa", r"Table 7\.2: 1\.5e\+09"]),
    ("fourbar_linearization_negative_spool_time_constant", lambda c: _fourbar("linearization", tau_v=-0.0045),
     "ModelError", [r"tau_v = -0\.0045 s \(spool time constant\) must be > 0 s"]),
    ("fourbar_supply_below_tank", lambda c: _fourbar("linearization", p_P=0.05e6),
     "ModelError", [r"p_P = 50000 Pa \(supply pressure\) must be above p_T = 100000 Pa"]),
    ("fourbar_negative_hose_volume", lambda c: _fourbar("build_with_circuit", V_h2=-3.14e-5),
     "ModelError", [r"V_h2 = -3\.14e-05 m\^3 \(hose volume 2\) must be > 0"]),
    ("fourbar_zero_hose_volume", lambda c: _fourbar("build_with_circuit", V_h1=0.0),
     "ModelError", [r"V_h1 = 0 m\^3"]),
    ("fourbar_nan_bulk_modulus", lambda c: _fourbar("linearization", B_h=float("nan")),
     "ModelError", [r"B_h = nan \(bulk modulus of the hose walls\) is not finite"]),
    ("fourbar_zero_oil_density", lambda c: _fourbar("build_with_circuit", rho_oil=0.0),
     "ModelError", [r"rho_oil = 0 kg/m\^3 \(oil density\) must be > 0"]),
    ("fourbar_discharge_coefficient_above_one", lambda c: _fourbar("circuit_rates", x=np.zeros(10), xd=np.zeros(10), p=np.zeros(3),
                                                                          U=0.0, Cd=1.7),
     "ModelError", [r"Cd = 1\.7 \(discharge coefficient\) must be in \(0, 1\]"]),
    ("fourbar_several_bad_values_in_one_message",
     lambda c: _fourbar("build_with_circuit", B_c=-1.0, tau_v=0.0, p_T=-1.0),
     "ModelError", [r"p_T = -1 Pa", r"B_c = -1 Pa", r"tau_v = 0 s"]),
    ("fourbar_spool_rates_negative_time_constant", lambda c: _fourbar("spool_rates", U=0.1, U_ref=0.2, tau_v=-1.0),
     "ModelError", [r"tau_v = -1 s"]),
    ("pressure_rate_zero_volume", lambda c: _hyd("pressure_rate", 1.5e9, 0, [1e-5]),
     "ModelError", [r"pressure_rate \(Eq\. \(7\.1\)\): V \(control volume\) = 0 m\^3 is not physical", r"> 0 m\^3"]),
    ("pressure_rate_negative_bulk_modulus", lambda c: _hyd("pressure_rate", -1e9, 1e-4, [1e-5]),
     "ModelError", [r"B_e \(effective bulk modulus\) = -1000000000\.0 Pa"]),
    ("effective_bulk_modulus_negative_oil", lambda c: _hyd("effective_bulk_modulus", -1.5e9, [(1e-4, 5e8)]),
     "ModelError", [r"B_oil \(bulk modulus of the oil\)", r"-1500000000\.0"]),
    ("effective_bulk_modulus_zero_total_volume", lambda c: _hyd("effective_bulk_modulus", 1.5e9, [(0.0, 5e8)]),
     "ModelError", [r"V = sum of the subvolumes \(control volume\) = 0"]),
    ("throttle_coefficient_zero_density", lambda c: _hyd("throttle_coefficient", 0.8, 2.8e-5, 0.0),
     "ModelError", [r"throttle_coefficient \(Eq\. \(7\.5\)\): rho_oil \(oil density\) = 0\.0 kg/m\^3"]),
    ("spool_rate_negative_tau", lambda c: _hyd("spool_rate", sp.Symbol("U"), 0.1, -0.0045),
     "ModelError", [r"spool_rate \(Eq\. \(7\.4\)\): tau \(spool time constant\) = -0\.0045 s"]),
    ("spool_rate_tau_declared_negative", lambda c: _hyd("spool_rate", sp.Symbol("U"), 0.1, sp.Symbol("T", negative=True)),
     "ModelError", [r"tau \(spool time constant\) = T cannot be > 0"]),
    ("friction_zero_stribeck_velocity", lambda c: _hyd("brown_mcphee_friction", 0.1, 210.0, 830.0, 0.0, 330.0),
     "ModelError", [r"v_s \(Stribeck velocity\) = 0\.0 m/s"]),
]


def test_pressure_rate_with_a_volume_symbol_stays_symbolic():
    V, B = sp.symbols("V B", positive=True)
    assert _hyd("pressure_rate", B, V, [1]) == B / V


# ================================================================== 3g. loaded files
_FILES = {}


def _files_dir():
    import atexit
    import shutil
    import tempfile
    if "dir" not in _FILES:
        _FILES["dir"] = Path(tempfile.mkdtemp(prefix="nhc_i22_files_"))
        atexit.register(shutil.rmtree, _FILES["dir"], ignore_errors=True)
    return _FILES["dir"]


def _saved(kind: str, c=None) -> Path:
    """A good file of each kind (written once per session)."""
    if kind in _FILES:
        return _FILES[kind]
    d = _files_dir()
    if kind == "lin":
        from nhcontrol.linearization.result import LinearizationResult
        A = np.diag([-1.0, -2.0, -3.0, -4.0, -5.0])
        obj = LinearizationResult(A=A, B=np.ones((5, 1)), states=tuple("abcde"), inputs=("u",),
                                  partition=None, n_spurious=0, t=0.0, steady=True, n_independent=5,
                                  model_name="probe")
    elif kind == "dltv":
        from nhcontrol.systems import DiscreteLTV
        obj = DiscreteLTV(np.repeat(np.eye(2)[None], 3, 0), np.ones((3, 2, 1)), 0.1, states=("p", "q"),
                          inputs=("u",))
    elif kind == "sim":
        from nhcontrol.simulate import forward_dynamics
        obj = forward_dynamics(c.sleigh, (0.0, 0.2), [0.0, 0.0, 0.0], [1.0, 0.0, 0.0])
    elif kind == "ref":
        from nhcontrol.models import sleigh as sl
        obj = sl.straight_motion(c.sleigh, 1.0)
        _FILES[kind] = obj.save(d / "ref.npz", np.linspace(0.0, 1.0, 11))
        return _FILES[kind]
    elif kind == "sweep":
        from nhcontrol.sweep import sweep
        obj = sweep(lambda v: {"peak": np.array([300.7, -2.5]) * v}, {"v": [1.0, 2.0]})
        _FILES[kind] = obj.save(d / "sweep.parquet")
        return _FILES[kind]
    _FILES[kind] = obj.save(d / f"{kind}.npz")
    return _FILES[kind]


def _edited(kind: str, c=None, *, arrays=None, meta=None, raw_meta=None, drop=()) -> Path:
    """A copy of the good file of ``kind`` with arrays replaced, metadata fields changed or
    removed (``drop``), or the metadata entry replaced by ``raw_meta`` text."""
    import json
    src = _saved(kind, c)
    with np.load(src, allow_pickle=False) as data:
        content = {k: data[k] for k in data.files}
    header = json.loads(str(content["__meta__"]))
    header["meta"].update(meta or {})
    for key in drop:
        header["meta"].pop(key, None)
    content.update(arrays or {})
    content["__meta__"] = np.array(raw_meta if raw_meta is not None else json.dumps(header))
    out = _files_dir() / f"edited_{len(list(_files_dir().iterdir()))}.npz"
    np.savez(out, **content)
    return out


def _load(kind: str):
    from nhcontrol.linearization.result import LinearizationResult
    from nhcontrol.simulate.result import SimulationResult
    from nhcontrol.systems import DiscreteLTV
    return {"lin": LinearizationResult.load, "dltv": DiscreteLTV.load, "sim": SimulationResult.load}[kind]


def _sweep_edited(c, *, leaf_dtype=None, raw=None, drop_column=None):
    import json
    import pyarrow.parquet as pq
    from nhcontrol.sweep import load_sweep
    table = pq.read_table(_saved("sweep"))
    key = b"nhcontrol.sweep"
    meta = json.loads(table.schema.metadata[key])
    if leaf_dtype is not None:
        meta["leaves"]["peak"]["dtype"] = leaf_dtype
    if drop_column is not None:
        table = table.drop([drop_column])
    table = table.replace_schema_metadata({key: raw if raw is not None else json.dumps(meta).encode()})
    out = _files_dir() / f"sweep_{len(list(_files_dir().iterdir()))}.parquet"
    pq.write_table(table, out)
    return load_sweep(out)


def _not_a_zip(c):
    from nhcontrol.linearization.result import LinearizationResult
    bad = _files_dir() / "notes.npz"
    bad.write_text("these are my notes, not a result")
    return LinearizationResult.load(bad)


def _truncated_zip(c):
    from nhcontrol.linearization.result import LinearizationResult
    bad = _files_dir() / "truncated.npz"
    bad.write_bytes(_saved("lin").read_bytes()[:60])
    return LinearizationResult.load(bad)


def _not_parquet(c):
    from nhcontrol.sweep import load_sweep
    bad = _files_dir() / "notes.parquet"
    bad.write_text("not parquet")
    return load_sweep(bad)


def _reference_load(c, **kw):
    from nhcontrol.reference import Reference
    return Reference.load(_edited("ref", c, **kw), c.sleigh)


LOADERS = [
    ("linearization_nan_in_A", lambda c: _load("lin")(_edited("lin", arrays={"A": np.diag([1, np.nan, 1, 1, 1.0])})),
     "StorageError", [r"edited_\d+\.npz: field 'A' of the saved LinearizationResult has non-finite entries",
                      r"index \(1, 1\)", r"save the result again"]),
    ("linearization_7_names_for_5_states",
     lambda c: _load("lin")(_edited("lin", meta={"states": list("abcdefg")})),
     "StorageError", [r"field 'states'", r"has 7 names", r"A \(5, 5\) has 5"]),
    ("linearization_non_square_A", lambda c: _load("lin")(_edited("lin", arrays={"A": np.ones((5, 4))})),
     "StorageError", [r"field 'A'", r"shape \(5, 4\)", r"square"]),
    ("linearization_B_rows_mismatch", lambda c: _load("lin")(_edited("lin", arrays={"B": np.ones((4, 1))})),
     "StorageError", [r"field 'B'", r"shape \(4, 1\)", r"\(5, \*\)"]),
    ("linearization_A_of_strings", lambda c: _load("lin")(_edited("lin", arrays={"A": np.array([["x"] * 5] * 5)})),
     "StorageError", [r"field 'A'", r"dtype <U1"]),
    ("linearization_metadata_field_missing", lambda c: _load("lin")(_edited("lin", drop=("steady",))),
     "StorageError", [r"field 'steady'", r"missing from the metadata"]),
    ("linearization_flag_of_wrong_type", lambda c: _load("lin")(_edited("lin", meta={"t_is_scalar": "yes"})),
     "StorageError", [r"field 't_is_scalar'", r"'yes', not true/false"]),
    ("linearization_metadata_not_json", lambda c: _load("lin")(_edited("lin", raw_meta="{not json")),
     "StorageError", [r"edited_\d+\.npz is not a readable nhcontrol result file", r"JSONDecodeError"]),
    ("linearization_not_a_zip_file", _not_a_zip,
     "StorageError", [r"notes\.npz is not a readable nhcontrol result file", r"not an \.npz \(zip\) archive"]),
    ("linearization_truncated_zip_file", _truncated_zip,
     "StorageError", [r"truncated\.npz is not a readable nhcontrol result file", r"BadZipFile"]),
    ("linearization_duplicate_state_names",
     lambda c: _load("lin")(_edited("lin", meta={"states": list("abcda")})),
     "StorageError", [r"field 'states'", r"repeats the names \['a'\]"]),
    ("discrete_negative_dt", lambda c: _load("dltv")(_edited("dltv", meta={"dt": -0.1})),
     "StorageError", [r"field 'dt' of the saved DiscreteLTV", r"-0\.1, not a positive number"]),
    ("discrete_state_names_mismatch", lambda c: _load("dltv")(_edited("dltv", meta={"states": ["p", "q", "r"]})),
     "StorageError", [r"field 'states'", r"3 names"]),
    ("discrete_Bd_steps_mismatch", lambda c: _load("dltv")(_edited("dltv", arrays={"Bd": np.ones((2, 2, 1))})),
     "StorageError", [r"field 'Bd'", r"\(2, 2, 1\)", r"\(3, 2, \*\)"]),
    ("simulation_rows_mismatch", lambda c: _load("sim")(_edited("sim", c, arrays={"x": np.zeros((2, 3))})),
     "StorageError", [r"field 'x' of the saved SimulationResult", r"shape \(2, 3\)"]),
    ("simulation_nan_in_states", lambda c: _load("sim")(_edited("sim", c, arrays={
        "xd": np.full(np.load(_saved("sim", c))["xd"].shape, np.nan)})),
     "StorageError", [r"field 'xd'", r"non-finite"]),
    ("reference_times_not_increasing", lambda c: _reference_load(c, arrays={"t": np.r_[np.linspace(0, 1, 10), 0.5]}),
     "StorageError", [r"field 't' of the saved Reference", r"not an increasing sequence"]),
    ("reference_parameters_wrong_length", lambda c: _reference_load(c, arrays={"parameters": np.ones(7)}),
     "StorageError", [r"field 'parameters'", r"shape \(7,\)", r"'chaplygin_sleigh'"]),
    ("sweep_metadata_dtype_int8", lambda c: _sweep_edited(c, leaf_dtype="|i1"),
     "SweepError", [r"metadata dtype of result 'peak'", r"int8", r"300\.7", r"would become 44"]),
    ("sweep_metadata_dtype_not_a_dtype", lambda c: _sweep_edited(c, leaf_dtype="banana"),
     "SweepError", [r"metadata dtype of result 'peak'", r"'banana', not a numpy dtype"]),
    ("sweep_metadata_not_json", lambda c: _sweep_edited(c, raw=b"{oops"),
     "SweepError", [r"sweep_\d+\.parquet", r"not valid JSON"]),
    ("sweep_column_missing", lambda c: _sweep_edited(c, drop_column="error"),
     "SweepError", [r"column 'error'", r"is missing"]),
    ("sweep_not_parquet", _not_parquet,
     "SweepError", [r"notes\.parquet' is not a readable Parquet file"]),
]


def test_loaders_accept_their_own_files(ctx):
    from nhcontrol.reference import Reference
    from nhcontrol.sweep import load_sweep
    for kind in ("lin", "dltv", "sim"):
        assert _load(kind)(_saved(kind, ctx)) is not None
    assert Reference.load(_saved("ref", ctx), ctx.sleigh).x(0.5)[0] == pytest.approx(0.5)
    back = load_sweep(_saved("sweep"))
    np.testing.assert_array_equal(back.values[1]["peak"], [601.4, -5.0])


# ================================================================== 3h. one coordinate, moving axis
def _one_angle_body(orientation, I3=0.5):
    from nhcontrol.modeling import rot_x
    mb = MultibodySystem("one_angle_issue22")
    x, th = mb.add_coordinates("x theta")
    m, I1, I2, J3 = mb.add_parameters(m=1.0, I1=0.1, I2=0.1, I3=I3)
    R = {"wobble": rot_z(th) * rot_x(sp.Rational(3, 10) * th), "planar": rot_z(th)}[orientation]
    mb.add_body("wheel", mass=m, inertia=sp.diag(I1, I2, J3), position=[x, 0, 0], orientation=R)
    return mb


def _wobble_call(**p):
    cm = _one_angle_body("wobble", I3=0.15).compile()
    return cm.M([0.0, 0.3], p=cm.param_vector(**p))


ONE_AXIS = [
    ("one_coordinate_moving_axis_triangle_inequality", lambda c: _one_angle_body("wobble").validate(),
     "ModelError", [r"inertia tensor of body 'wheel'", r"triangle"]),
    ("one_coordinate_moving_axis_at_call_time", lambda c: _wobble_call(I3=0.5),
     "ModelError", [r"'wheel'", r"triangle"]),
]


def test_one_coordinate_about_a_fixed_axis_skips_the_triangle_inequality():
    """A planar body (rot_z(θ) only) never turns about its other axes: its inertia about them does
    not enter, so I3 > I1 + I2 is accepted there (decided by the same sampling as for several)."""
    _one_angle_body("planar").validate()


# ================================================================== 4. CLI, debris, sweeps
def _fake_target(exc=None):
    """A reproduce target that writes two figures (and raises ``exc`` after the first)."""
    import types

    def run(out=None, quick=False):
        names = []
        for i in range(2):
            if exc is not None and i == 1:
                raise exc
            (out / f"fig{i}.png").write_text("new")
            names.append(str(out / f"fig{i}.png"))
        return {"figures": names}
    return types.SimpleNamespace(run=run, summary=lambda result: "summary")


def _cli_exit(capsys, argv):
    from nhcontrol.cli import main
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err
    return info.value.code, err


def _free_port() -> int:
    import socket
    with socket.socket() as sk:
        sk.bind(("127.0.0.1", 0))
        return sk.getsockname()[1]


def test_cli_full_file_system_is_one_line(tmp_path, monkeypatch, capsys):
    import errno
    from nhcontrol import cli
    where = tmp_path / "figs" / "fig1.png"
    monkeypatch.setattr(cli, "load", lambda target: _fake_target(
        OSError(errno.ENOSPC, "No space left on device", str(where))))
    code, err = _cli_exit(capsys, ["reproduce", "skateboard", "--out", str(tmp_path / "figs")])
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "No space left on device" in err and str(where) in err and "free disk space" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["figs"]          # no staging folder left


def test_cli_full_file_system_while_moving_into_place(tmp_path, monkeypatch, capsys):
    import errno
    from nhcontrol import cli

    def replace(src, dst):
        raise OSError(errno.ENOSPC, "No space left on device", str(dst))
    monkeypatch.setattr(cli, "load", lambda target: _fake_target())
    monkeypatch.setattr(cli.os, "replace", replace)
    code, err = _cli_exit(capsys, ["reproduce", "skateboard", "--out", str(tmp_path / "figs")])
    assert code == 2 and "Traceback" not in err
    assert re.search(r"reproduce skateboard failed: No space left on device \(.*figs/fig\d\.png\)", err)


def test_cli_unreachable_address_is_one_line(capsys):
    port = _free_port()
    code, err = _cli_exit(capsys, ["reproduce", "monte-carlo-ball-plate", "--quick", "--n", "2",
                                   "--address", f"tcp://127.0.0.1:{port}"])
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert f"cannot reach the Dask scheduler at --address tcp://127.0.0.1:{port}" in err
    assert "dask scheduler" in err and "leave out --address" in err


def test_cli_library_error_is_one_line(monkeypatch, capsys, tmp_path):
    from nhcontrol import cli
    from nhcontrol.sweep import SweepError
    monkeypatch.setattr(cli, "load", lambda target: _fake_target(SweepError("could not connect to X")))
    code, err = _cli_exit(capsys, ["reproduce", "skateboard", "--out", str(tmp_path / "o")])
    assert code == 2 and "could not connect to X (SweepError" in err and "Traceback" not in err


def test_cli_writable_out_in_a_read_only_folder(tmp_path, monkeypatch, capsys):
    """The staging folder cannot be made next to --out (read-only parent): it is made inside
    --out, the run completes, and nothing is left behind."""
    import tempfile
    from nhcontrol import cli
    out = tmp_path / "ro" / "figs"
    out.mkdir(parents=True)
    real = tempfile.mkdtemp

    def mkdtemp(prefix="", dir=None):
        if Path(dir) == out.parent.resolve():
            raise PermissionError(13, "Permission denied", str(dir))
        return real(prefix=prefix, dir=dir)
    monkeypatch.setattr(tempfile, "mkdtemp", mkdtemp)
    monkeypatch.setattr(cli, "load", lambda target: _fake_target())
    assert cli.main(["reproduce", "skateboard", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == [".nhcontrol-export.json", "fig0.png", "fig1.png",
                                                     "skateboard.json"]


def _old_folder(path: Path, owner_pid: int | None) -> Path:
    from nhcontrol._util.debris import OWNER_FILE
    path.mkdir()
    (path / "fig0.png").write_text("half")
    if owner_pid is not None:
        (path / OWNER_FILE).write_text(f"{owner_pid} 1700000000.0 {__import__('socket').gethostname()}\n")
    os.utime(path, (1_700_000_000, 1_700_000_000))
    return path


def test_stale_staging_folders_are_removed_by_the_next_run(tmp_path, monkeypatch):
    from nhcontrol import cli
    out = tmp_path / "figs"
    killed = _old_folder(tmp_path / ".figs.nhcontrol-killed1", _dead_pid())
    ownerless = _old_folder(tmp_path / ".figs.nhcontrol-killed2", None)
    running = _old_folder(tmp_path / ".figs.nhcontrol-running", os.getppid())      # a live process
    fresh = tmp_path / ".figs.nhcontrol-fresh"
    fresh.mkdir()                                                  # newer than this process: kept
    other = _old_folder(tmp_path / ".other.nhcontrol-x", None)    # another --out's folder: kept
    monkeypatch.setattr(cli, "load", lambda target: _fake_target())
    assert cli.main(["reproduce", "skateboard", "--out", str(out)]) == 0
    assert not killed.exists() and not ownerless.exists()
    assert running.exists() and fresh.exists() and other.exists()


def test_stale_c_build_folders_are_removed_by_the_next_build(tmp_path):
    from nhcontrol.compiled import cbackend
    from nhcontrol.compiled import cache as C
    d = C.ensure_private_dir(tmp_path / "cache")
    killed = _old_folder(d / "nhc_build_killed", _dead_pid())
    busy = _old_folder(d / "nhc_build_busy", os.getppid())
    if cbackend.cffi_problem():
        pytest.skip("no cffi: no C builds")
    try:
        cbackend.compile_library(["double nhc_probe(double x) { return 2.0 * x; }\n"], d / "probe.so")
    except cbackend.CompilerUnavailable:
        pytest.skip("no C compiler")
    assert not killed.exists() and busy.exists()
    assert not [p for p in d.glob("nhc_build_*") if p != busy]     # its own build folder is gone too


def test_threads_sweep_stops_scheduling_after_the_first_failure(monkeypatch):
    """errors='raise': a failure at the second point of 200 000 ends the sweep: the worker
    threads finish the call they are in and start no other point (before: every chunk in flight
    ran to its end, over 20 s for this grid). Deterministic: every point after the failing one
    waits for the sweep's stop event (recorded by wrapping ``threading.Event``), so each of the
    two threads is inside exactly one call when the failure is recorded, and at most points 0, 1
    and one other run, whatever the scheduling."""
    import threading

    import _sweep_funcs as sf
    from nhcontrol.sweep import sweep

    class Recorded(threading.Event):
        def __init__(self):
            super().__init__()
            sf.GATES.append(self)

    monkeypatch.setattr(threading, "Event", Recorded)
    monkeypatch.setattr(sf, "GATES", [])
    sf._CALLS["n"] = 0
    with pytest.raises(ValueError, match="no solution at a = 1") as info:
        sweep(sf.fails_at_one_gated, {"a": list(range(200_000))}, backend="threads", max_workers=2)
    assert sf._CALLS["n"] <= 3, f"{sf._CALLS['n']} calls: points started after the first failure"
    assert "raised by the sweep at point 1: {'a': 1}" in "".join(getattr(info.value, "__notes__", []))
    sf._CALLS["n"] = 0                                   # errors='capture' still runs every point
    res = sweep(sf.fails_at_one, {"a": list(range(40))}, backend="threads", max_workers=2, errors="capture")
    assert sf._CALLS["n"] == 40 and res.errors[1].startswith("ValueError") and res.values[2] == 2.0


# ================================================================== runner (keep last)
CATALOGUE = HANGS + RATES_CLOCKS + APPELL + OFF_MANIFOLD_HYDRAULICS + LOADERS + ONE_AXIS


@pytest.mark.parametrize("case, call, error, patterns", CATALOGUE, ids=[c[0] for c in CATALOGUE])
def test_bad_input(ctx, case, call, error, patterns):
    import nhcontrol._util.errors as E
    from nhcontrol._util.storage import StorageError
    from nhcontrol.sweep import SweepError
    from nhcontrol.applications.verify import MonteCarloError
    cls = {"StorageError": StorageError, "SweepError": SweepError,
           "MonteCarloError": MonteCarloError}.get(error) or getattr(E, error)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with pytest.raises(cls) as info:
            call(ctx)
    text = str(info.value)
    missing = [p for p in patterns if not re.search(p, text)]
    assert not missing, f"{case}: message lacks {missing}:\n{text}"


def test_catalogue_counts():
    """Issue 22: at least 40 new catalogue cases over the classes (plus the security, hang, Gramian,
    CLI, debris and sweep tests above)."""
    assert len(CATALOGUE) >= 40
    assert all(len(group) >= 2 for group in (HANGS, RATES_CLOCKS, APPELL, OFF_MANIFOLD_HYDRAULICS, LOADERS,
                                             ONE_AXIS))
