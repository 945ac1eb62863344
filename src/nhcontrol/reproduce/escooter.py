"""``nhcontrol reproduce e-scooter``: the e-scooter with toroidal wheels and suspensions (Sect. 5.6).

The minimal 14 × 14 Jacobian of the steady forward motion (third numerical procedure,
partition [`nhcontrol.models.escooter.PARTITION`][nhcontrol.models.escooter.PARTITION]) is
identified as
``J(v) = J0 + v J1 + v² J2`` from three speeds (checked at a fourth, residual reported).
Structurally zero eigenvalues are split off; the self-stable speed ranges are found by
Brent's method on the spectral abscissa
([`nhcontrol.analysis.critical_points()`][nhcontrol.analysis.critical_points]).

Reduction check: hoop wheels and Table 4.1 (``BENCHMARK_PARAMETERS``), suspensions present,
against the benchmark bicycle
([`nhcontrol.models.benchmark_bicycle`][nhcontrol.models.benchmark_bicycle], an independent
model) and Meijaard et al.'s ``v_w, v_c``. Trends of thesis Ch. 9 in ``"trends"``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import linearization as _lin
from ..analysis import critical_points, structural_zeros, turn_floquet, turn_stability
from ..analysis import stable_ranges as turn_stable_ranges
from ..models import benchmark_bicycle as bb
from ..models import bicycle_turns as bt
from ..models import escooter as es
from .bicycle_benchmark import jacobian_polynomial
from .toroidal_bicycle import MEIJAARD_VC, MEIJAARD_VW
from nhcontrol.plotting.style import PALETTE

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.linearization.partition import Partition

__all__ = ["run", "summary", "speed_polynomial", "stable_ranges", "spectrum", "steady_turns",
           "suspension_trends", "rider_trends", "RIDER_CASES"]

V_MAX = 15.0
SPEEDS = np.round(np.linspace(0.5, V_MAX, 30), 10)
REDUCTION_SPEEDS = (1.0, 3.0, 5.0, 7.0)
SUSPENSION_IMAG = 15.0
"""Suspension pairs: eigenvalues with |Im| above this [rad/s] (lean-steer modes stay below)."""


def speed_polynomial(cm: CompiledModel, p: np.ndarray, partition: dict) -> tuple[tuple[np.ndarray, ...], float]:
    """``(J0, J1, J2)`` of ``J(v)`` and the relative residual of the fit at ``v = 7.3``."""
    part = _lin.Partition.from_dict(partition)

    def J(v: float) -> np.ndarray:
        return np.asarray(_lin.linearize(cm, es.steady_forward(cm, v, p=p), part).A)

    poly = jacobian_polynomial(J, speeds=(0.0, 2.0, 4.0))
    Jt = J(7.3)
    res = float(np.max(np.abs(poly[0] + 7.3 * poly[1] + 7.3**2 * poly[2] - Jt)) / np.max(np.abs(Jt)))
    return poly, res


def _block(poly: tuple[np.ndarray, ...]):
    J0, J1, J2 = poly
    keep = structural_zeros(J0 + 3.1 * J1 + 3.1**2 * J2).keep
    return lambda v: (J0 + v * J1 + v * v * J2)[np.ix_(keep, keep)]


def spectrum(poly: tuple[np.ndarray, ...], speeds: Any) -> np.ndarray:
    """Non-trivial eigenvalues at each speed, sorted by real part: ``(len(speeds), k)``."""
    block = _block(poly)
    out = [np.linalg.eigvals(block(v)) for v in speeds]
    return np.array([ev[np.lexsort((ev.imag, ev.real))] for ev in out])


def stable_ranges(poly: tuple[np.ndarray, ...], v_max: float = V_MAX) -> list[list[float]]:
    """Self-stable speed intervals ``[v_lo, v_hi]`` in ``(0, v_max]`` (Brent-refined ends)."""
    block = _block(poly)
    grid = np.linspace(0.05, v_max, 120)
    cps = critical_points(block, grid, coalescences=False)
    stable0 = np.max(np.linalg.eigvals(block(grid[0])).real) < 0
    ranges, lo = [], (grid[0] if stable0 else None)
    for c in cps:
        if c.direction == "stabilizing":
            lo = c.value
        elif c.direction == "destabilizing" and lo is not None:
            ranges.append([float(lo), float(c.value)])
            lo = None
    if lo is not None:
        ranges.append([float(lo), float(v_max)])
    return ranges


def _case(cm: CompiledModel, partition: dict, **kw: float) -> dict[str, Any]:
    poly, res = speed_polynomial(cm, cm.param_vector(**kw), partition)
    ranges = stable_ranges(poly)
    ev = spectrum(poly, SPEEDS)
    return {"parameters": kw, "stable_speed_ranges": ranges,
            "stable_width": float(sum(b - a for a, b in ranges)),
            "max_real_part": float(np.max(ev.real)), "polynomial_residual": res,
            "_poly": poly}


def reduction(cm: CompiledModel) -> dict[str, Any]:
    """Hoop wheels + Table 4.1 + suspensions vs the benchmark bicycle and Meijaard's speeds."""
    p = cm.param_vector(**es.BENCHMARK_PARAMETERS)
    poly, _ = speed_polynomial(cm, p, es.PARTITION)
    bcm = bb.model()
    part = _lin.Partition.from_dict(bb.PARTITION_4_172)
    rows, worst = [], 0.0
    for v in REDUCTION_SPEEDS:
        ev = spectrum(poly, [v])[0]
        lat = ev[np.abs(ev.imag) < SUSPENSION_IMAG]        # lean-steer modes
        Jb = np.asarray(_lin.linearize(bcm, bb.steady_forward(bcm, v), part).A)
        eb = np.linalg.eigvals(Jb)
        eb = eb[np.abs(eb) > 1e-6 * np.max(np.abs(eb))]
        lat, eb = np.sort_complex(lat), np.sort_complex(eb)
        if lat.shape != eb.shape:
            raise RuntimeError(f"reduction: {lat.size} lean-steer eigenvalues vs {eb.size} of the bicycle")
        worst = max(worst, float(np.max(np.abs(lat - eb) / np.abs(eb))))
        rows.append({"v": v, "eigenvalues": [[float(z.real), float(z.imag)] for z in lat],
                     "benchmark_eigenvalues": [[float(z.real), float(z.imag)] for z in eb]})
    ranges = stable_ranges(poly, v_max=10.0)
    vw, vc = ranges[0]
    names = [k for k in bb.PARAMETERS]
    return {"parameters": {k: es.BENCHMARK_PARAMETERS[k] for k in names},
            "suspension": {k: es.BENCHMARK_PARAMETERS[k] for k in ("k_R", "c_R", "k_F", "c_F")},
            "wheels": "hoops (mu = sigma = 0)", "speeds": list(REDUCTION_SPEEDS), "eigenvalues": rows,
            "v_w": vw, "v_c": vc,
            "v_w_rel_error_vs_meijaard": abs(vw - MEIJAARD_VW) / MEIJAARD_VW,
            "v_c_rel_error_vs_meijaard": abs(vc - MEIJAARD_VC) / MEIJAARD_VC,
            "max_rel_diff_vs_benchmark_model": worst}


def _handlebar(factor: float) -> dict[str, float]:
    return {k: es.PARAMETERS[k] * factor for k in ("I_Hxx", "I_Hyy", "I_Hzz", "I_Hxz")}


HOOPS = {"mu_R": 0.0, "mu_F": 0.0, "sigma_R": 0.0, "sigma_F": 0.0}
REDUCED_HANDLEBAR = 0.1
"""Handlebar inertia scale of the "reduced" case (chosen)."""


def _abscissa_min(case: dict[str, Any]) -> float:
    ev = spectrum(case["_poly"], np.linspace(0.05, V_MAX, 300))
    return float(np.min(np.max(ev.real, axis=1)))


SUSPENSION_SPEED = 5.0
"""Speed [m/s] of the suspension-pair sensitivities (the real parts do not depend on it)."""


def _pairs_at(cm: CompiledModel, v: float, **kw: float) -> np.ndarray:
    poly, _ = speed_polynomial(cm, cm.param_vector(**kw), es.PARTITION)
    ev = spectrum(poly, [v])[0]
    up = ev[ev.imag > 0]
    return up[np.argsort(-up.imag)][:2][::-1]


def _slope(f: list[float], y: np.ndarray) -> list[float]:
    return [float(np.polyfit(np.log(f), np.log(np.abs(y[:, j])), 1)[0]) for j in range(y.shape[1])]


def suspension_trends(cm: CompiledModel, *, quick: bool = False) -> dict:
    """The suspension eigenvalue pairs against damping, stiffness and mass (thesis Ch. 9).

    Both dampers (``c_R, c_F``), both springs (``k_R, k_F``) or the rider-frame mass ``m_B``
    are scaled by the factors; the two pairs of largest imaginary part at ``SUSPENSION_SPEED``
    (the suspension modes; the lean-steer modes are slower) are tracked and the log-log slopes of ``|Re|`` and ``Im`` against the
    factor reported (1 = proportional, 0.5 = square root, 0 = independent).
    """
    factors = [0.5, 1.0, 2.0] if quick else [0.5, 0.7, 1.0, 1.4, 2.0]
    P = es.PARAMETERS
    sweeps = {"damping": lambda f: {"c_R": P["c_R"] * f, "c_F": P["c_F"] * f},
              "stiffness": lambda f: {"k_R": P["k_R"] * f, "k_F": P["k_F"] * f},
              "mass_m_B": lambda f: {"m_B": P["m_B"] * f}}
    mass_f = [0.7, 1.0, 1.3] if quick else [0.6, 0.8, 1.0, 1.2, 1.4]
    out: dict[str, Any] = {"speed": SUSPENSION_SPEED, "factors": factors, "mass_factors": mass_f}
    for name, kw in sweeps.items():
        fs = mass_f if name == "mass_m_B" else factors
        pairs = np.array([_pairs_at(cm, SUSPENSION_SPEED, **kw(f)) for f in fs])
        out[name] = {"pairs": [[[float(z.real), float(z.imag)] for z in row] for row in pairs],
                     "slope_abs_real": _slope(fs, pairs.real), "slope_imag": _slope(fs, pairs.imag)}
    d, k, m = out["damping"], out["stiffness"], out["mass_m_B"]
    out["thesis_statement"] = ("real parts independent of the speed, highly dependent on the damping "
                               "coefficients; imaginary parts highly dependent on the stiffnesses and the mass")
    out["computed_statement"] = (
        f"d log|Re| / d log c = {d['slope_abs_real'][0]:.2f}, {d['slope_abs_real'][1]:.2f} (d log Im / d log c = "
        f"{d['slope_imag'][0]:.2f}, {d['slope_imag'][1]:.2f}); d log Im / d log k = {k['slope_imag'][0]:.2f}, "
        f"{k['slope_imag'][1]:.2f} (d log|Re| / d log k = {k['slope_abs_real'][0]:.2f}, {k['slope_abs_real'][1]:.2f}); "
        f"d log Im / d log m_B = {m['slope_imag'][0]:.2f}, {m['slope_imag'][1]:.2f}")
    out["agrees"] = bool(min(d["slope_abs_real"]) > 0.5 and max(np.abs(d["slope_imag"])) < 0.2
                         and min(k["slope_imag"]) > 0.3 and max(np.abs(k["slope_abs_real"])) < 0.3
                         and min(np.abs(m["slope_imag"])) > 0.05)
    return out


RIDER_CASES: dict[str, dict[str, float]] = {
    "rider_inertia_x0.5": {k: es.PARAMETERS[k] * 0.5 for k in ("I_Bxx", "I_Byy", "I_Bzz", "I_Bxz")},
    "rider_inertia_x2": {k: es.PARAMETERS[k] * 2.0 for k in ("I_Bxx", "I_Byy", "I_Bzz", "I_Bxz")},
    "rider_higher_z_B+0.15": {"z_B": es.PARAMETERS["z_B"] + 0.15},
    "rider_lower_z_B-0.15": {"z_B": es.PARAMETERS["z_B"] - 0.15},
}
"""Rider-model variants of body B (chosen; Paudel et al.'s inertia tensor is not used)."""


def rider_trends(cm: CompiledModel, *, quick: bool = False) -> dict:
    """Self-stable speed ranges for rider-model variants of body B, alone and with the handlebar
    inertia reduced (thesis Ch. 9: modifying B alone gives no self-stable range; together with a
    reduced handlebar inertia the eigenvalues evolve like Paudel et al.'s)."""
    P = es.PARTITION
    out: dict[str, Any] = {"cases": {}}
    cases = {"nominal": {}, **RIDER_CASES}
    if quick:
        cases = {k: cases[k] for k in ("nominal", "rider_inertia_x2", "rider_lower_z_B-0.15")}
    for name, kw in cases.items():
        alone = _case(cm, P, **kw)
        both = _case(cm, P, **kw, **_handlebar(REDUCED_HANDLEBAR))
        out["cases"][name] = {"parameters": kw, "stable_ranges": alone["stable_speed_ranges"],
                              "min_spectral_abscissa": _abscissa_min(alone),
                              "with_reduced_handlebar": {"stable_ranges": both["stable_speed_ranges"],
                                                         "min_spectral_abscissa": _abscissa_min(both)}}
    cs = out["cases"]
    out["thesis_statement"] = ("modifying the inertia of body B (rider model): no self-stability range; combined with "
                               "a reduced handlebar inertia: eigenvalues evolve as in Paudel et al.")
    # a self-stable window: Brent-refined ranges, or a stable point of the fine 300-speed grid (windows
    # narrower than the 120-speed grid of the critical points, e.g. near the capsize speed)
    no_range = all(not c["stable_ranges"] and c["min_spectral_abscissa"] > 0 for c in cs.values())
    with_range = [k for k, c in cs.items() if c["with_reduced_handlebar"]["stable_ranges"]
                  or c["with_reduced_handlebar"]["min_spectral_abscissa"] < 0]
    out["computed_statement"] = (f"rider variants alone: self-stable range in none: {no_range}; with the handlebar "
                                 f"inertia x{REDUCED_HANDLEBAR}: self-stable range in {with_range}")
    out["agrees"] = bool(no_range)
    return out


def steady_turns(cm: CompiledModel, *, quick: bool = False) -> dict:
    """Hands-free steady turns of the nominal e-scooter and their stability (thesis Ch. 9 outlook).

    The families of [`bicycle_turns.families()`][nhcontrol.models.bicycle_turns.families]
    (capsize bifurcation, reversed handlebar, rear-wheel pivoting), each point classified by the
    constant Jacobian ([`turn_stability()`][nhcontrol.analysis.turn_stability]); outside quick
    mode one point is checked against the Floquet multipliers of the periodic linearization.
    """
    fams, missing = bt.families(cm, max_step=0.2 if quick else 0.08, max_speed=10.0 if quick else 20.0,
                                max_rate=30.0 if quick else 60.0)
    pts = {}
    for k, f in fams.items():
        pts[k] = []
        for t in f:
            st = turn_stability(cm, t)
            pts[k].append({"v": t.speed, "lean_deg": t.lean_deg, "steer_deg": t.steer_deg, "radius_m": t.radius,
                           "Omega": t.Omega, "stable": st.stable, "max_real_eig": st.max_real,
                           "residual": t.residual})
    res: dict[str, Any] = {
        "capsize_speed_straight_running": bt.capsize_speed(cm),
        "capsize_bifurcation_speed": bt.bifurcation_speed(cm)[0],
        "families": pts, "families_not_found": missing,
        "max_residual": max(p["residual"] for f in pts.values() for p in f),
        "stable_ranges": {k: turn_stable_ranges(cm, f) for k, f in fams.items()},
    }
    res["any_stable_turn"] = any(p["stable"] for f in pts.values() for p in f)
    if bt.FAMILY_NAMES[0] in fams:
        end = fams[bt.FAMILY_NAMES[0]][-1]
        res["family_i_end"] = {"v": end.speed, "lean_deg": end.lean_deg, "steer_deg": end.steer_deg,
                               "Omega": end.Omega}
    if not quick:
        fam = fams[bt.FAMILY_NAMES[0]]
        t = fam[len(fam) // 3]
        res["floquet_check"] = {"v": t.speed, "lean_deg": t.lean_deg, **turn_floquet(cm, t)}
    res["thesis_statement"] = ("Ch. 9 proposes the stability of the e-scooter's circular motions as future work "
                               "(no result printed)")
    res["computed_statement"] = ("no stable steady turn on the families found" if not res["any_stable_turn"]
                                 else "stable sections: " + str(res["stable_ranges"]))
    if "family_i_end" in res and abs(res["family_i_end"]["Omega"]) > 0.5:
        res["computed_statement"] += ("; family (i) does not end in a static equilibrium: at v -> 0 it keeps "
                                      f"Omega = {res['family_i_end']['Omega']:.3f} rad/s and runs into the "
                                      "rear-wheel pivoting motion, so (i) and (iii) are one family")
    return res


def run(*, out: Path | None = None, quick: bool = False) -> dict:
    """Reduction check, nominal spectrum vs speed, the Ch. 9 trends and the steady turns."""
    cm = es.model()
    P = es.PARTITION
    red = reduction(cm)
    nominal = _case(cm, P)
    ev = spectrum(nominal["_poly"], SPEEDS)
    # suspension pairs: the eigenvalues with |Im| >= SUSPENSION_IMAG at every speed
    pairs = [e[np.abs(e.imag) >= SUSPENSION_IMAG] for e in ev]
    n_pairs = {p.size for p in pairs}
    real_spread = (float(np.max(np.ptp(np.array([np.sort(p.real) for p in pairs]), axis=0)))
                   if len(n_pairs) == 1 else float("inf"))
    reduced_hoop = _case(cm, P, **_handlebar(REDUCED_HANDLEBAR), **HOOPS)
    reduced_torus = _case(cm, P, **_handlebar(REDUCED_HANDLEBAR))
    sigmas = [1.0, 0.7, 0.4] if quick else [1.0, 0.85, 0.7, 0.55, 0.4]
    sig_cases = [_case(cm, P, sigma_R=s, sigma_F=s) for s in sigmas]
    nus = [es.PARAMETERS["nu"], 0.32, 0.4] if quick else [es.PARAMETERS["nu"], 0.3, 0.34, 0.38, 0.42, 0.46]
    nu_cases = [_case(cm, P, nu=n) for n in nus]
    nu_low = [_case(cm, P, nu=n) for n in (0.1, 0.2)]
    sig_abs = [_abscissa_min(c) for c in sig_cases]
    trends = {
        "nominal_completely_unstable": bool(not nominal["stable_speed_ranges"] and _abscissa_min(nominal) > 0),
        "reduced_handlebar_inertia_opens_stable_range": bool(reduced_hoop["stable_width"] > 0),
        "toroidal_wheels_close_it": bool(reduced_torus["stable_width"] == 0.0
                                          and _abscissa_min(reduced_torus) > 0),
        "smaller_ellipse_ratio_more_stable": bool(np.all(np.diff(sig_abs) < 0)),
        "steer_axis_tilt_no_help": bool(all(c["stable_width"] == 0.0 for c in nu_cases)),
        "suspension_real_parts_speed_independent": bool(real_spread < 1e-9),
    }
    def clean(c: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in c.items() if not k.startswith("_")}
    result = {
        "reduction_max_rel_diff": max(red["max_rel_diff_vs_benchmark_model"],
                                      red["v_w_rel_error_vs_meijaard"], red["v_c_rel_error_vs_meijaard"]),
        "reduction": red,
        "parameters": dict(es.PARAMETERS),
        "speeds": [float(v) for v in SPEEDS],
        "eigenvalues": [[[float(z.real), float(z.imag)] for z in e] for e in ev],
        "stable_speed_ranges": nominal["stable_speed_ranges"],
        "polynomial_residual": nominal["polynomial_residual"],
        "suspension_pairs_real_part_spread": real_spread,
        "trends": trends,
        "trend_cases": {
            "reduced_handlebar_hoops": clean(reduced_hoop), "reduced_handlebar_toroidal": clean(reduced_torus),
            "sigma": [clean(c) | {"min_spectral_abscissa": a} for c, a in zip(sig_cases, sig_abs)],
            "steer_tilt_increased": [clean(c) for c in nu_cases],
            "steer_tilt_decreased": [clean(c) for c in nu_low],
        },
    }
    result["steady_turns"] = steady_turns(cm, quick=quick)
    result["suspension_trends"] = suspension_trends(cm, quick=quick)
    result["rider_trends"] = rider_trends(cm, quick=quick)
    if out is not None:
        _plot(result, {"nominal": nominal, "reduced_hoop": reduced_hoop, "reduced_torus": reduced_torus,
                       "sigma": sig_cases}, Path(out))
    return result


def _plot(result: dict, cases: dict[str, Any], out: Path) -> None:
    from nhcontrol.plotting.style import PALETTE, cite, new_figure, savefig

    vs = np.linspace(0.05, V_MAX, 300)
    fig, axes = new_figure(1, 2, figsize=(11, 4),
                           title="E-scooter, steady forward motion: eigenvalues vs speed")
    for ax, key, title in ((axes[0], "nominal", "nominal e-scooter (toroidal wheels)"),
                           (axes[1], "reduced_hoop",
                            f"handlebar inertia × {REDUCED_HANDLEBAR}, hoop wheels")):
        ev = spectrum(cases[key]["_poly"], vs)
        ax.plot(vs, ev.real, "k.", ms=1.5)
        ax.plot(vs, np.abs(ev.imag), ".", color=PALETTE[0], ms=1.0)
        ax.plot([], [], "k.", label="Re λ")
        ax.plot([], [], ".", color=PALETTE[0], label="|Im λ|")
        for i, (a, b) in enumerate(cases[key]["stable_speed_ranges"]):
            ax.axvspan(a, b, color=PALETTE[2], alpha=0.3, label="self-stable" if i == 0 else None)
        ax.axhline(0.0, color="0.6", lw=0.6)
        ax.set_ylim(-15, 35)
        ax.set_xlabel("forward speed v (m/s)")
        ax.set_ylabel("eigenvalue λ (1/s)")
        ax.set_title(title)
        ax.legend()
    cite(fig, "thesis", "Sect. 5.6 (model derived here, parameters chosen)",
         extra="Eigenvalues of the minimal Jacobian (third procedure) of the steady forward "
               "motion; shaded: self-stable speeds.")
    names = [savefig(fig, out, "escooter_eigenvalues").name]

    fig, ax = new_figure(figsize=(6, 4), title="E-scooter trends: spectral abscissa vs speed")
    for key, label in (("reduced_hoop", "hoops"), ("reduced_torus", "toroidal (nominal tyres)")):
        ev = spectrum(cases[key]["_poly"], vs)
        ax.plot(vs, np.max(ev.real, axis=1), label=f"handlebar × {REDUCED_HANDLEBAR}, {label}")
    for c in cases["sigma"]:
        ev = spectrum(c["_poly"], vs)
        ax.plot(vs, np.max(ev.real, axis=1), "--",
                label=f"nominal, cross-section ratio σ = {c['parameters']['sigma_R']}")
    ax.axhline(0.0, color="0.6", lw=0.6)
    ax.set_ylim(-3, 3)
    ax.set_xlabel("forward speed v (m/s)")
    ax.set_ylabel("spectral abscissa max Re λ (1/s)")
    ax.legend()
    cite(fig, "thesis", "the trends of Ch. 9",
         extra="Below zero: asymptotically stable. σ: aspect ratio of the tyre's elliptic "
               "cross-section (docs/theory/toroidal_wheel.md).")
    names.append(savefig(fig, out, "escooter_trends").name)
    names.append(_plot_turns(result["steady_turns"], out))
    names.append(_plot_suspension(result["suspension_trends"], out))
    names.append(_plot_rider(result["rider_trends"], out))
    result["figures"] = names


def _plot_suspension(st: dict, out: Path) -> str:
    from nhcontrol.plotting.style import cite, new_figure, savefig

    fig, axes = new_figure(1, 3, figsize=(12.0, 4.0),
                           title=f"E-scooter: suspension eigenvalue pairs at v = {st['speed']:g} m/s")
    for ax, key, fs, lab in ((axes[0], "damping", st["factors"], "dampers c x"),
                             (axes[1], "stiffness", st["factors"], "springs k x"),
                             (axes[2], "mass_m_B", st["mass_factors"], r"mass $m_B$ x")):
        z = np.asarray(st[key]["pairs"])
        for j, mk in enumerate(("o-", "s--")):
            ax.plot(z[:, j, 0], z[:, j, 1], mk, color=("#0072B2", "#D55E00")[j], label=f"pair {j + 1}")
            for f, (x, y) in zip(fs, z[:, j]):
                ax.annotate(f"{f:g}", (x, y), fontsize=6, xytext=(3, 3), textcoords="offset points")
        ax.set_xlabel("Re λ (1/s)")
        ax.set_title(lab + " factor (annotated)", fontsize=9)
        ax.legend(fontsize=7)
    axes[0].set_ylabel("Im λ (rad/s)")
    cite(fig, "thesis", "Ch. 9 (trend computed here)",
         extra="Thesis: real parts depend on the damping, imaginary parts on the stiffness and mass. Computed: "
               + st["computed_statement"])
    return savefig(fig, out, "escooter_suspension_trends").name


def _plot_rider(rt: dict, out: Path) -> str:
    from nhcontrol.plotting.style import cite, new_figure, savefig

    names = list(rt["cases"])
    a = [rt["cases"][k]["min_spectral_abscissa"] for k in names]
    b = [rt["cases"][k]["with_reduced_handlebar"]["min_spectral_abscissa"] for k in names]
    fig, ax = new_figure(figsize=(7.5, 4.0), title="E-scooter: rider model (body B) and self-stability")
    x = np.arange(len(names))
    ax.bar(x - 0.2, a, 0.4, color="#0072B2", label="rider variant alone")
    ax.bar(x + 0.2, b, 0.4, color="#E69F00", label=f"with handlebar inertia x{REDUCED_HANDLEBAR}")
    ax.axhline(0.0, color="0.4", lw=0.8)
    ax.set_xticks(x)
    ax.set_xticklabels([n.replace("rider_", "") for n in names], fontsize=7, rotation=15)
    ax.set_ylabel("min over speed of max Re λ (1/s)")
    ax.legend(fontsize=7)
    cite(fig, "thesis", "Ch. 9 (trend computed here)",
         extra="Below zero: a self-stable speed range exists. Thesis: modifying B alone gives none. Computed: "
               + rt["computed_statement"])
    return savefig(fig, out, "escooter_rider_trends").name


def _plot_turns(tr: dict, out: Path) -> str:
    from nhcontrol.plotting._turns import plot_turn_families
    from nhcontrol.plotting.style import cite, savefig

    fig, _ = plot_turn_families(tr["families"], tr["capsize_bifurcation_speed"], "E-scooter: hands-free steady turns")
    cite(fig, "thesis", "the outlook of Ch. 9 (computed here)",
         extra="Families of steady turns by continuation (nhcontrol.models.bicycle_turns); dotted: capsize "
               "bifurcation of straight running. No section is stable for the chosen parameters.")
    return savefig(fig, out, "escooter_steady_turns").name


def summary(result: dict) -> str:
    """Human-readable report of [`run()`][nhcontrol.reproduce.escooter.run]."""
    red = result["reduction"]
    lines = [
        "E-scooter with toroidal wheels and suspensions (Sect. 5.6, derived here)",
        f"  reduction (hoops, Table 4.1, suspensions on): max rel. diff {result['reduction_max_rel_diff']:.2e}"
        f"  v_w = {red['v_w']:.12f}, v_c = {red['v_c']:.12f} m/s",
        f"  nominal stable speed ranges: {result['stable_speed_ranges'] or 'none (completely unstable)'}",
        f"  suspension pairs: real-part spread over speed {result['suspension_pairs_real_part_spread']:.1e} 1/s",
        "  Ch. 9 trends:",
    ]
    lines += [f"    {k}: {v}" for k, v in result["trends"].items()]
    for key in ("suspension_trends", "rider_trends"):
        lines.append(f"  {key}: thesis: {result[key]['thesis_statement']}; computed: "
                     f"{result[key]['computed_statement']} (agrees {result[key]['agrees']})")
    tr = result["steady_turns"]
    lines.append(f"  steady turns: capsize bifurcation {tr['capsize_bifurcation_speed']:.6f} m/s (straight running "
                 f"{tr['capsize_speed_straight_running']:.6f}); families "
                 f"{ {k: len(v) for k, v in tr['families'].items()} }, not found {list(tr['families_not_found'])}; "
                 f"max residual {tr['max_residual']:.1e}; {tr['computed_statement']}")
    return "\n".join(lines)
