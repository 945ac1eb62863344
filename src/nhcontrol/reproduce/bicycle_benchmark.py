"""Reproduce the bicycle benchmark of thesis Sect. 4.3 (``nhcontrol reproduce bicycle-benchmark``).

What is computed, all from the linearization of the Newton--Euler model
([`nhcontrol.models.benchmark_bicycle`][nhcontrol.models.benchmark_bicycle]) about the steady
forward motion:

* the ``10 x 10`` Jacobian of the third procedure for partition (4.172) (Eq. (4.180)), shown to be
  exactly ``J(v) = J0 + v J1 + v^2 J2`` (fit from 3 speeds, prediction error at others);
* the exact zero eigenvalues split off structurally (rows/columns of ``J`` that vanish:
  forward motion and the ``l = 4`` spurious eigenvalues of Eq. (4.181));
* the coefficients ``ζ1..ζ7`` of the quartic (4.181)/(4.184), by exact least squares of the
  characteristic-polynomial coefficients of the non-trivial block at several speeds, compared
  with Table 4.2;
* the critical speeds ``v_d, v_w, v_c`` (Table 4.3 / Meijaard et al. 2007, Table 2) by Brent's
  method on the linearization;
* the four non-trivial eigenvalues for ``v = 0, 1, ..., 10`` m/s;
* the same spectrum from partitions (4.172), (4.203) (second procedure, Eq. (4.204)) and
  (4.208) (third procedure, Eq. (4.209)), and the wrong spectra when the dependent blocks are
  dropped (Eqs. (4.205) and (4.209) without ``x_ad``, Sect. 4.5.2);
* the first and second numerical procedures and the finite-difference counterpart
  (Eqs. (7.104)-(7.110)) at one speed, against the third procedure.

With ``out`` it saves ``fig_4_5_eigenvalues_vs_speed.png`` and ``fig_4_4_root_locus.png``.
"""

from __future__ import annotations

import time
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from nhcontrol._util.errors import LinearSystemError

if TYPE_CHECKING:
    from typing import Mapping
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.linearization.partition import Partition

__all__ = ["run", "summary", "reference_data", "jacobian_polynomial", "jacobian_4_180",
           "zeta_from_jacobian", "ZETA_NAMES"]

ZETA_NAMES = tuple(f"z{k}" for k in range(1, 8))
"""JSON keys of the coefficients ζ1..ζ7 of Eq. (4.184)."""

_FIT_SPEEDS = (0.0, 1.0, 2.0)
"""Speeds (m/s) used to identify J0, J1, J2 and those used to check the prediction."""
_CHECK_SPEEDS = (-1.5, 3.7, 7.3, 10.0)
_ZETA_SPEEDS = (-2.0, -1.5, -1.0, -0.5, 0.5, 1.0, 1.5, 2.0)
"""Speeds used for the least-squares fit of the ζ's (symmetric, moderate: well conditioned)."""


def reference_data() -> dict[str, Any]:
    """Published reference values (Table 4.2, Meijaard et al. 2007 Table 2 and Sect. 5.3).

    Returns
    -------
    dict
        ``zeta_benchmark``, ``zeta_thesis`` (dicts ζ1..ζ7), ``speeds`` (vd, vw, vc),
        ``lambda_d``, ``matrices`` (M, C1, K0, K2 as 2x2 arrays), ``source`` (file path).
    """
    path = resources.files("nhcontrol.reproduce") / "data" / "bicycle_benchmark_reference.txt"
    zb, zt, speeds, mats, eig, eigs, j4180 = {}, {}, {}, {}, {}, {}, {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        kind, name, *vals = line.split()
        nums = [float(v) for v in vals]
        if kind == "zeta":
            zb[name], zt[name] = nums
        elif kind == "speed":
            speeds[name] = nums[0]
        elif kind == "matrix":
            mats[name] = np.array(nums).reshape(2, 2)
        elif kind == "eig":
            eig[name] = nums[0]
        elif kind == "eigs":
            eigs[float(name)] = np.array(nums[0::2]) + 1j * np.array(nums[1::2])
        elif kind == "j4180":
            r, c = (int(i) for i in name.split(","))
            j4180[(r, c)] = tuple(nums)
    return {"zeta_benchmark": zb, "zeta_thesis": zt, "speeds": speeds, "matrices": mats,
            "lambda_d": eig["lambda_d"], "eigenvalues": eigs, "jacobian_4_180": j4180,
            "source": str(path)}


def jacobian_4_180(v: float) -> NDArray[np.float64]:
    """The Jacobian of Eq. (4.180) as printed (4 decimals), evaluated at speed ``v``."""
    J = np.zeros((10, 10))
    for (r, c), (a0, a1, a2) in reference_data()["jacobian_4_180"].items():
        J[r, c] = a0 + a1 * v + a2 * v * v
    return J


def _jacobian_fn(cm: CompiledModel, partition: Partition | Mapping[str, Any]):
    from nhcontrol.linearization import linearize
    from nhcontrol.models import benchmark_bicycle as bb

    def J(v: float) -> NDArray[np.float64]:
        return np.array(linearize(cm, bb.steady_forward(cm, float(v)), partition).A)

    return J


def jacobian_polynomial(J_of_v: Callable[[float], NDArray[np.float64]],
                        speeds: Sequence[float] = _FIT_SPEEDS) -> tuple[NDArray[np.float64], ...]:
    """Identify ``J(v) = J0 + v J1 + v^2 J2`` from three speeds (exact interpolation).

    Parameters
    ----------
    J_of_v : callable
        Speed -> Jacobian ``(N, N)`` (e.g. the third procedure at the steady forward motion).
    speeds : sequence of 3 float
        Distinct speeds.

    Returns
    -------
    (J0, J1, J2) : tuple of (N, N) ndarray
    """
    vs = np.asarray(speeds, dtype=float)
    V = np.vander(vs, 3, increasing=True)                       # rows [1, v, v^2]
    Js = np.array([J_of_v(v) for v in vs])
    coef = np.linalg.solve(V, Js.reshape(3, -1)).reshape((3,) + Js.shape[1:])
    return coef[0], coef[1], coef[2]


def zeta_from_jacobian(block_of_v: Callable[[float], NDArray[np.float64]],
                       speeds: Sequence[float] = _ZETA_SPEEDS) -> tuple[dict[str, float], float]:
    """ζ1..ζ7 of Eq. (4.184) from the characteristic polynomial of the non-trivial block.

    ``det(λI - J_b(v)) = λ^4 + c1 λ^3 + c2 λ^2 + c3 λ + c4`` with the structure
    ``c1 = ζ1 v``, ``c2 = ζ2 v^2 - ζ3``, ``c3 = ζ4 v^3 - ζ5 v``, ``c4 = ζ6 - ζ7 v^2``:
    linear least squares over several speeds (exact when the structure holds).

    Parameters
    ----------
    block_of_v : callable
        Speed -> the ``4 x 4`` non-trivial block (e.g. ``[phi_b, delta, phi_b_d, delta_d]``).
    speeds : sequence of float
        At least two non-zero speeds.

    Raises
    ------
    LinearSystemError
        If the block is not 4 x 4.

    Returns
    -------
    zeta : dict
    structure_residual : float
        Max relative residual of the structured fit (~1e-15 when Eq. (4.184) holds exactly).
    """
    from nhcontrol.analysis.stability import charpoly

    vs = np.asarray(speeds, dtype=float)
    c = np.array([charpoly(block_of_v(v)) for v in vs])
    if c.shape[1] != 5:
        raise LinearSystemError(f"the non-trivial block must be 4 x 4 (quartic of Eq. (4.181)), "
                                f"got {c.shape[1] - 1} x {c.shape[1] - 1}; remove the exact zero "
                                "eigenvalues first (analysis.structural_zeros)")
    one = np.ones_like(vs)
    designs = [
        (np.c_[vs], c[:, 1], (1,)),
        (np.c_[vs**2, -one], c[:, 2], (2, 3)),
        (np.c_[vs**3, -vs], c[:, 3], (4, 5)),
        (np.c_[one, -vs**2], c[:, 4], (6, 7)),
    ]
    zeta: dict[str, float] = {}
    resid = 0.0
    for A, b, ks in designs:
        sol, *_ = np.linalg.lstsq(A, b, rcond=None)
        resid = max(resid, float(np.max(np.abs(A @ sol - b)) / max(1.0, np.max(np.abs(b)))))
        for k, val in zip(ks, sol):
            zeta[f"z{k}"] = float(val)
    return {k: zeta[k] for k in ZETA_NAMES}, resid


def _sig_digits(a: float, b: float) -> float:
    if a == b:
        return 16.0
    return float(-np.log10(abs(a - b) / max(abs(b), 1e-300)))


def _pairs(lam) -> list[list[float]]:
    lam = np.asarray(lam, dtype=complex)
    lam = lam[np.lexsort((lam.imag, lam.real))]
    return [[float(z.real), float(z.imag)] for z in lam]


def _drop(J: NDArray[np.float64], n_keep: int) -> NDArray[np.float64]:
    return J[:n_keep, :n_keep]


def run(*, out: Path | None = None, quick: bool = False, animate: bool = False) -> dict[str, Any]:
    """Run the bicycle benchmark reproduction.

    Parameters
    ----------
    out : Path, optional
        Folder for the figures (Fig. 4.5 and Fig. 4.4, PNG).
    quick : bool
        Coarser speed grid for the figures and the bracketing.
    animate : bool
        With ``out``: also ``bicycle_self_stable_5ms.gif``, the uncontrolled bicycle at 5 m/s
        (self-stable) after a lean-rate kick of 0.5 rad/s: the weave decays (rear and top views).

    Returns
    -------
    dict
        JSON-serialisable: ``jacobian_shape``, ``spurious_zero_eigenvalues``, ``char_poly``,
        ``critical_speeds``, ``eigenvalues``, ``partitions``, ``procedures``, ``jacobian_v1``,
        ``polynomial_in_v``, ``reference``, ``timings``.
    """
    from nhcontrol.analysis.stability import (critical_points, eigenvalues_vs_parameter,
                                              match_spectra, structural_zeros)
    from nhcontrol.linearization import Partition, linearize
    from nhcontrol.linearization.finite_difference import finite_difference_jacobian
    from nhcontrol.linearization.first import first_procedure
    from nhcontrol.linearization.second import second_procedure
    from nhcontrol.models import benchmark_bicycle as bb
    from nhcontrol.sweep import sweep

    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    cm = bb.model()
    timings["model_s"] = time.perf_counter() - t0
    ref_data = reference_data()

    p172 = Partition.from_dict(bb.PARTITION_4_172)
    J_of_v = _jacobian_fn(cm, p172)
    t0 = time.perf_counter()
    J1 = J_of_v(1.0)
    timings["one_linearization_s"] = time.perf_counter() - t0

    # --- J(v) = J0 + v J1 + v^2 J2 ---------------------------------------------------------
    Jp = jacobian_polynomial(J_of_v)

    def J_poly(v: float) -> NDArray[np.float64]:
        return Jp[0] + v * Jp[1] + v * v * Jp[2]

    pred_err = 0.0
    for v in _CHECK_SPEEDS:
        Jv = J_of_v(v)
        pred_err = max(pred_err, float(np.max(np.abs(J_poly(v) - Jv)) / np.max(np.abs(Jv))))

    # --- structure: exact zero eigenvalues, non-trivial block -------------------------------
    sz = structural_zeros(J_of_v(1.2345))          # generic speed: only identically-zero entries
    keep = list(sz.keep)

    def block(v: float) -> NDArray[np.float64]:
        return J_poly(v)[np.ix_(keep, keep)]

    res1 = linearize(cm, bb.steady_forward(cm, 1.0), p172)
    states = tuple(res1.states)
    l = int(res1.n_spurious)                      # l spurious eigenvalues of Eq. (4.124)
    n_zero = sz.n_zero

    # --- ζ's ----------------------------------------------------------------------------------
    zeta, zeta_resid = zeta_from_jacobian(block)
    zeta_digits = {k: _sig_digits(zeta[k], ref_data["zeta_thesis"][k]) for k in ZETA_NAMES}
    zeta_digits_bm = {k: _sig_digits(zeta[k], ref_data["zeta_benchmark"][k]) for k in ZETA_NAMES}

    # --- critical speeds ----------------------------------------------------------------------
    grid = np.linspace(0.0, 10.0, 41 if quick else 201)
    t0 = time.perf_counter()
    cps = critical_points(block, grid)
    timings["critical_speeds_s"] = time.perf_counter() - t0
    coal = [c for c in cps if c.kind == "coalescence" and c.direction == "real_to_complex"]
    hopf = [c for c in cps if c.kind == "oscillatory" and c.direction == "stabilizing"]
    caps = [c for c in cps if c.kind == "real" and c.direction == "destabilizing"]
    crit = {"vd": coal[0].value if coal else None, "vw": hopf[0].value if hopf else None,
            "vc": caps[0].value if caps else None}
    crit_digits = {k: (_sig_digits(v, ref_data["speeds"][k]) if v is not None else None)
                   for k, v in crit.items()}
    lam_d = float(coal[0].eigenvalue.real) if coal else None
    lam_w = complex(hopf[0].eigenvalue) if hopf else None
    # direct check: spectral abscissa of the *direct* linearization at v_w and v_c
    direct_check = {}
    for key in ("vw", "vc"):
        if crit[key] is not None:
            lam = np.linalg.eigvals(J_of_v(crit[key])[np.ix_(keep, keep)])
            direct_check[key] = float(np.max(lam.real))

    # --- eigenvalues v = 0..10, by a sweep of direct linearizations ----------------------------
    speeds = [float(v) for v in range(11)]
    t0 = time.perf_counter()
    res = sweep(lambda v: np.linalg.eigvals(J_of_v(v)[np.ix_(keep, keep)]), {"v": speeds})
    timings["sweep_11_speeds_s"] = time.perf_counter() - t0
    eigen = {f"{v:g}": _pairs(lam) for v, lam in zip(speeds, res.values)}
    eig_err = max(match_spectra(ref_data["eigenvalues"][v], lam)[1]
                  for v, lam in zip(speeds, res.values))

    # --- partitions (Sect. 4.5.2) -------------------------------------------------------------
    p208 = Partition.from_dict(bb.PARTITION_4_208)
    p203 = dict(independent=bb.PARTITION_4_203["independent"],
                dependent=list(bb.PARTITION_4_203["admissible_dependent"])
                + list(bb.PARTITION_4_203["dependent"]))
    g = cm.n - cm.m - cm.l
    part_speeds = [0.0, 2.0, 5.0, 8.0] if quick else [float(v) for v in range(11)]
    errs = {"4.172": 0.0, "4.203": 0.0, "4.208": 0.0}
    wrong_err = {"4.205": np.inf, "4.208_without_x_ad": np.inf}
    wrong_examples: dict[str, Any] = {}
    spectra_v5: dict[str, Any] = {}
    shapes = {}
    for v in part_speeds:
        true = np.linalg.eigvals(block(v))
        ref_v = bb.steady_forward(cm, v)
        J172 = np.array(linearize(cm, ref_v, p172).A)
        J208 = np.array(linearize(cm, ref_v, p208).A)
        J203 = np.array(second_procedure(cm, ref_v, p203).J)
        shapes = {"4.172": list(J172.shape), "4.203": list(J203.shape), "4.208": list(J208.shape)}
        for key, J in (("4.172", J172), ("4.203", J203), ("4.208", J208)):
            lam = np.linalg.eigvals(J)
            idx, e = match_spectra(true, lam)
            errs[key] = max(errs[key], e)
            if v == 5.0:
                spectra_v5[key] = _pairs(lam[idx])
        for key, Jw in (("4.205", _drop(J203, 2 * g)), ("4.208_without_x_ad", _drop(J208, 2 * g))):
            lw = np.linalg.eigvals(Jw)
            _, e = match_spectra(true, lw)
            wrong_err[key] = min(wrong_err[key], e)
            if v == 5.0:
                wrong_examples[key] = _pairs(lw)
    partitions = {
        "speeds": part_speeds,
        "shapes": shapes,
        "max_error": errs,
        "spectrum_v5": spectra_v5,
        "wrong_spectrum_v5": wrong_examples,
        "wrong_min_error": {k: float(v) for k, v in wrong_err.items()},
    }

    # --- other procedures at v = 5 -----------------------------------------------------------
    ref5 = bb.steady_forward(cm, 5.0)
    true5 = np.linalg.eigvals(block(5.0))
    A3 = np.array(linearize(cm, ref5, p172).A)
    t0 = time.perf_counter()
    f1 = first_procedure(cm, ref5)
    timings["first_procedure_s"] = time.perf_counter() - t0
    s2 = second_procedure(cm, ref5, p172)
    procs: dict[str, Any] = {}
    for name, J in (("first", f1.J), ("second", s2.J), ("third", A3)):
        lam = np.linalg.eigvals(J)
        _, e = match_spectra(true5, lam)
        nz = int(structural_zeros(J).n_zero)
        procs[name] = {"shape": list(J.shape), "max_error": e, "structural_zero_eigenvalues": nz}
    fd = {}
    for h in ((1e-3, 1e-5) if quick else (1e-2, 1e-3, 1e-4, 1e-5, 1e-6)):
        Jfd = finite_difference_jacobian(cm, ref5, h=h).J
        _, e = match_spectra(true5, np.linalg.eigvals(Jfd))
        fd[f"{h:g}"] = {"jacobian_error": float(np.max(np.abs(Jfd - f1.J))), "eigenvalue_error": e}
    procs["finite_difference"] = {"shape": [2 * cm.n, 2 * cm.n], "by_step": fd}

    result: dict[str, Any] = {
        "model": "benchmark_bicycle (Meijaard et al. 2007, thesis Sect. 4.3)",
        "partition": bb.PARTITION_4_172,
        "states": list(states),
        "jacobian_shape": list(J1.shape),
        "zero_eigenvalues": n_zero,
        "spurious_zero_eigenvalues": l,
        "forward_motion_zero_eigenvalues": n_zero - l,
        "nontrivial_states": [states[i] for i in keep],
        "structural_zero_tol": sz.tol,
        "jacobian_v1": J1.tolist(),
        "polynomial_in_v": {"fit_speeds": list(_FIT_SPEEDS), "check_speeds": list(_CHECK_SPEEDS),
                            "max_relative_prediction_error": pred_err,
                            "J0": Jp[0].tolist(), "J1": Jp[1].tolist(), "J2": Jp[2].tolist()},
        "char_poly": zeta,
        "char_poly_structure_residual": zeta_resid,
        "char_poly_digits_vs_table_4_2": zeta_digits,
        "char_poly_digits_vs_benchmark": zeta_digits_bm,
        "critical_speeds": crit,
        "critical_speeds_digits_vs_meijaard": crit_digits,
        "critical_eigenvalues": {"lambda_d": lam_d,
                                 "lambda_w": None if lam_w is None else [lam_w.real, lam_w.imag]},
        "critical_direct_spectral_abscissa": direct_check,
        "eigenvalues": eigen,
        "eigenvalues_max_error_vs_meijaard": eig_err,
        "jacobian_v1_max_error_vs_4_180": float(np.max(np.abs(J1 - jacobian_4_180(1.0)))),
        "partitions": partitions,
        "procedures": procs,
        "reference": {"zeta_table_4_2": ref_data["zeta_thesis"],
                      "zeta_benchmark": ref_data["zeta_benchmark"],
                      "speeds_meijaard": ref_data["speeds"], "lambda_d": ref_data["lambda_d"]},
        "timings": timings,
    }

    if out is not None:
        from nhcontrol.plotting.stability import plot_eigenvalues_vs_parameter, plot_root_locus
        from nhcontrol.plotting.style import cite, savefig

        out = Path(out)
        vgrid = np.linspace(0.0, 10.0, 101 if quick else 1001)
        sw = eigenvalues_vs_parameter(block, vgrid, parameter="v (m/s)")
        shown = [c for c in (coal[:1] + hopf[:1] + caps[:1])]
        names = {"0": "$v_d$", "1": "$v_w$", "2": "$v_c$"}
        fig = plot_eigenvalues_vs_parameter(
            sw, critical=shown, labels=names, xlabel="forward speed v (m/s)",
            title="Benchmark bicycle: eigenvalues vs speed", ylim=(-10.0, 10.0))
        cite(fig, "thesis", "Fig. 4.5",
             extra="Lean-steer eigenvalues of the minimal Jacobian (third procedure); $v_d$, $v_w$, "
                   "$v_c$: real pair merging, weave and capsize speeds (Meijaard et al. 2007).")
        p1 = savefig(fig, out, "fig_4_5_eigenvalues_vs_speed")
        crossing = [c for c in shown if c.kind != "coalescence"]
        fig = plot_root_locus(sw, critical=crossing,
                              labels=["$v_w$" if c.kind == "oscillatory" else "$v_c$" for c in crossing],
                              title="Benchmark bicycle: root locus, 0 < v < 10 m/s")
        cite(fig, "thesis", "Fig. 4.4",
             extra="Eigenvalues in the complex plane as the speed v grows from 0 to 10 m/s.")
        p2 = savefig(fig, out, "fig_4_4_root_locus")
        result["figures"] = [str(p1), str(p2)]
        if animate:
            result["animations"] = [str(_animation(cm, out, quick))]
    return result


def _animation(cm: CompiledModel, out: Path, quick: bool) -> Path:
    """Simulate the uncontrolled bicycle at 5 m/s after a lean-rate kick and animate it."""
    from nhcontrol.models import benchmark_bicycle as bb
    from nhcontrol.plotting import animate
    from nhcontrol.plotting.animation import bicycle_scene
    from nhcontrol.simulate import consistent_initial_conditions, forward_dynamics

    ref = bb.steady_forward(cm, 5.0)
    x, xd = np.array(ref.x(0.0), float), np.array(ref.xd(0.0), float)
    xd[cm.coordinates.index("phi_b")] += 0.5
    ic = consistent_initial_conditions(cm, x, xd, partition=bb.PARTITION_4_172)
    t_end = 2.0 if quick else 6.0
    sim = forward_dynamics(cm, (0.0, t_end), ic.x, ic.xd, t_eval=np.linspace(0.0, t_end, 301))
    c = list(cm.coordinates)
    X = np.asarray(sim.x)
    scene = bicycle_scene(sim.t, X[:, c.index("x_b")], X[:, c.index("y_b")], X[:, c.index("psi_b")],
                          X[:, c.index("phi_b")], X[:, c.index("delta")],
                          title="Benchmark bicycle at 5 m/s, uncontrolled: the weave decays")
    return animate(scene, Path(out) / "bicycle_self_stable_5ms.gif", fps=15,
                   dpi=40 if quick else 60, max_frames=20 if quick else 120)


def summary(result: dict[str, Any]) -> str:
    """Human-readable report of `run()`."""
    L = []
    L.append("Benchmark bicycle (thesis Sect. 4.3), third numerical procedure, partition (4.172)")
    L.append(f"  Jacobian {result['jacobian_shape'][0]} x {result['jacobian_shape'][1]}; "
             f"{result['zero_eigenvalues']} exact zero eigenvalues = "
             f"{result['spurious_zero_eigenvalues']} spurious (l) + "
             f"{result['forward_motion_zero_eigenvalues']} forward motion; non-trivial block "
             f"{result['nontrivial_states']}")
    pv = result["polynomial_in_v"]
    L.append(f"  J(v) = J0 + v J1 + v^2 J2: fit at v = {pv['fit_speeds']} predicts v = "
             f"{pv['check_speeds']} to {pv['max_relative_prediction_error']:.1e} (relative)")
    L.append("  Quartic (4.184) coefficients (Table 4.2, 'present work' column):")
    ref = result["reference"]["zeta_table_4_2"]
    for k, v in result["char_poly"].items():
        L.append(f"    ζ{k[1:]} = {v:22.14f}   table {ref[k]:22.14f}   "
                 f"{result['char_poly_digits_vs_table_4_2'][k]:4.1f} digits")
    L.append("  Critical speeds (Meijaard et al. 2007, Table 2):")
    refs = result["reference"]["speeds_meijaard"]
    for k, v in result["critical_speeds"].items():
        if v is None:
            L.append(f"    {k}: not found")
            continue
        L.append(f"    {k} = {v:.14f} m/s   reference {refs[k]:.14f}   "
                 f"{result['critical_speeds_digits_vs_meijaard'][k]:4.1f} digits")
    L.append(f"  Jacobian at v = 1 vs Eq. (4.180): max |error| = "
             f"{result['jacobian_v1_max_error_vs_4_180']:.1e} (entries a0 + a1 v + a2 v^2 with "
             "each coefficient printed to 4 decimals)")
    L.append(f"  Non-trivial eigenvalues [1/s] (max error vs Meijaard et al. Table 2: "
             f"{result['eigenvalues_max_error_vs_meijaard']:.1e}):")
    for v, lam in result["eigenvalues"].items():
        txt = ", ".join(f"{re:+.4f}{im:+.4f}j" for re, im in lam)
        L.append(f"    v = {v:>2} m/s: {txt}")
    P = result["partitions"]
    L.append("  Partitions (Sect. 4.5.2), max eigenvalue error vs (4.172): "
             + ", ".join(f"({k}) {P['shapes'][k][0]}x{P['shapes'][k][1]}: {e:.1e}"
                         for k, e in P["max_error"].items()))
    ok = all(e > 1e-3 for e in P["wrong_min_error"].values())
    L.append(f"  Check {'passed' if ok else 'FAILED'}: dropping the dependent blocks must change "
             "the spectrum (Sect. 4.5.2) and does (smallest eigenvalue error over the speeds: "
             + ", ".join(f"{k}: {e:.2f}" for k, e in P["wrong_min_error"].items()) + ")")
    pr = result["procedures"]
    L.append("  Procedures at v = 5 m/s (max eigenvalue error vs non-trivial block): "
             + ", ".join(f"{k} {pr[k]['shape'][0]}x{pr[k]['shape'][1]}: {pr[k]['max_error']:.1e}"
                         for k in ("first", "second", "third")))
    fd = pr["finite_difference"]["by_step"]
    L.append("  Finite-difference counterpart (7.109), eigenvalue error by step h: "
             + ", ".join(f"h={h}: {d['eigenvalue_error']:.1e}" for h, d in fd.items()))
    tm = result["timings"]
    L.append(f"  Timings: model {tm['model_s']:.1f} s, one linearization "
             f"{1e3 * tm['one_linearization_s']:.1f} ms")
    if "figures" in result:
        L.append("  Figures: " + ", ".join(result["figures"]))
    return "\n".join(L)
