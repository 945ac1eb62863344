"""Nothing silently wrong on the newer surfaces (issue 22): pickles, locks, long loops, Gramians
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
    cm = _probe().compile(cache=False)
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
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), NHCONTROL_CACHE_DIR=str(cache))
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
import os, sys, time, fcntl
from nhcontrol.compiled import cache as C
d = sys.argv[1]
if sys.argv[2] == "live":
    with C._locked(C.Path(d)):
        print("locked", flush=True)
        time.sleep(60)
else:   # holds the lock but the file names a process that has ended (an inherited descriptor)
    fd = os.open(os.path.join(d, C.LOCK_NAME), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.ftruncate(fd, 0)
    os.pwrite(fd, (sys.argv[3] + " 1700000000.0 " + C._HOST + "\\n").encode(), 0)
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
        p = subprocess.Popen(args, stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ, PYTHONPATH=str(ROOT / "src")))
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
        cm = _probe().compile(cache_dir=d)
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


OFF_MANIFOLD_HYDRAULICS = [
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


# ================================================================== runner (keep last)
CATALOGUE = HANGS + RATES_CLOCKS + APPELL + OFF_MANIFOLD_HYDRAULICS


@pytest.mark.parametrize("case, call, error, patterns", CATALOGUE, ids=[c[0] for c in CATALOGUE])
def test_bad_input(ctx, case, call, error, patterns):
    import nhcontrol._util.errors as E
    cls = getattr(E, error)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with pytest.raises(cls) as info:
            call(ctx)
    text = str(info.value)
    missing = [p for p in patterns if not re.search(p, text)]
    assert not missing, f"{case}: message lacks {missing}:\n{text}"
