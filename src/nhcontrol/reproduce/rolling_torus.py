"""``nhcontrol reproduce rolling-torus``: steady motions of the rolling elliptic torus (Sect. 6.3).

Derived here from first principles (thesis Sects. 6.3.1-6.3.7): the steady-motion relations, the
change of variables that makes the circular-motion linearization constant and the
nondimensionalization are derived in ``docs/theory/rolling_torus.md``. Rates are reported in
rad/s and nondimensional, ``ω̄ = ω sqrt(R/g)``, ``Ω̄ = Ω sqrt(R/g)`` with the outer radius
``R = rho + a`` (the scaling derived here: the thesis' ω̄, Ω̄ are not comparable number by
number). Headline numbers:

* ``floquet_vs_constant_max_diff``: the monodromy matrix of the periodic LTV linearization
  (integrated over one heading period) against ``T(0)^{-1} exp(T_h J) T(0)``, relative, and
  the nontrivial multipliers against ``exp(T_h eig(J))``;
* ``hoop_limit``: the straight-rolling critical speed as the cross-section shrinks to zero,
  against ``sqrt(g r)/2``;
* ``thresholds``: critical speed of straight rolling and critical spin rate about a vertical
  diameter, solid and hollow torus;
* ``circular``: Floquet multipliers of circular motions.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.linalg as sl

from ..analysis import (MARGINAL_RTOL, charpoly_root, floquet, linearize_relative_equilibrium,
                        stability_threshold)
from ..models import rolling_torus as rt
from nhcontrol.plotting.style import PALETTE

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.reference import Reference

__all__ = ["run", "summary", "circular_linearization", "straight_jacobian", "straight_critical_speed",
           "vertical_spin_jacobian", "vertical_spin_threshold", "circular_stability",
           "thesis_unit_cases", "THESIS_PAIR"]

GEOMETRY = {"rho": 0.3, "mu": 0.2, "sigma": 1.0, "m": 2.0, "g": 9.81}
CASES = [(-5.0, 0.75), (-5.0, 0.5), (-20.0, 1.5), (10.0, 2.0)]
"""(phi0 [deg], nondimensional spin ω̄) of the circular motions validated by Floquet theory."""
MUS = [0.2, 0.1, 0.05, 0.02, 0.01, 0.001, 0.0]


def circular_linearization(cm: CompiledModel, ref: Reference, mo: "rt.SteadyMotion"):
    """Periodic LTV linearization (thesis partition) and its heading-frame constant form."""
    return linearize_relative_equilibrium(cm, ref, rt.PARTITION, lambda st: rt.heading_frame(st, mo.Omega),
                                          rename={"x_C": "u_C", "y_C": "v_C"})


def straight_jacobian(cm: CompiledModel, v: float, p: Any = None) -> np.ndarray:
    """Jacobian of upright straight rolling with centre speed ``v`` [m/s]."""
    vals = p if isinstance(p, dict) else dict(zip(cm.parameters, np.asarray(p if p is not None else cm.defaults)))
    ref, mo = rt.straight_rolling(cm, float(v) / (vals["rho"] + vals["a"]), p=p)
    return circular_linearization(cm, ref, mo).J


def straight_critical_speed(cm: CompiledModel, p: Any = None, bracket: tuple[float, float] = (1e-3,
                            50.0)) -> float:
    """Root of the pair coefficient: ``det(λI - J) = λ^6 (λ^2 + c(v))`` (hoop: ``sqrt(g rho)/2``)."""
    return charpoly_root(lambda v: straight_jacobian(cm, v, p), 2, bracket)


def vertical_spin_jacobian(cm: CompiledModel, Omega: float, p: Any = None) -> np.ndarray:
    """Constant (heading-frame) Jacobian of the spin about a vertical diameter."""
    ref, mo = rt.vertical_spin(cm, Omega, p=p)
    return circular_linearization(cm, ref, mo).J


def vertical_spin_threshold(cm: CompiledModel, p: Any = None, bracket: tuple[float, float] = (1e-2,
                            200.0)) -> float:
    """Spin rate [rad/s] above which the spin about a vertical diameter is (marginally) stable."""
    return stability_threshold(lambda Om: vertical_spin_jacobian(cm, Om, p), bracket)


def circular_stability(cm: CompiledModel, phi0: float, omega: float, p: Any = None, *, branch: int = 0):
    """``(motion, eig(J), stable)`` of a circular motion (stable: no ``Re λ > 0`` beyond round-off)."""
    ref, mo = rt.circular_motion(cm, phi0, omega=omega, p=p, branch=branch)
    lam = np.linalg.eigvals(circular_linearization(cm, ref, mo).J)
    return mo, lam, bool(lam.real.max() <= MARGINAL_RTOL * max(1.0, float(np.abs(lam).max())))


def _stable(J: np.ndarray) -> bool:
    lam = np.linalg.eigvals(J)
    return bool(lam.real.max() <= MARGINAL_RTOL * max(1.0, float(np.abs(lam).max())))


def circular_stability_straight(cm: CompiledModel, v: float, p: Any) -> bool:
    """Linear (marginal) stability of upright straight rolling at centre speed ``v``."""
    return _stable(straight_jacobian(cm, v, p))


def _scale(vals: dict) -> float:
    return math.sqrt((vals["rho"] + vals["a"]) / vals["g"])


def _pairs(z: np.ndarray) -> list[list[float]]:
    return [[float(v.real), float(v.imag)] for v in z]


def _nontrivial(mu: np.ndarray, tol: float = 1e-4) -> np.ndarray:
    return mu[np.abs(mu - 1.0) > tol]


THESIS_PAIR = {"phi0_deg": -5.0, "omega_bar": 0.75, "Omega_bar": 0.0794,
               "multipliers": [[-0.9797, 0.2006], [-0.9797, -0.2006]], "stable": True,
               "unstable_omega_bar": 0.5}
"""Sect. 6.3.8, Eq. (6.133): the printed pair (stable) and the unstable case omega_bar = 0.5."""


def thesis_unit_cases(cm: CompiledModel, vals: dict) -> dict:
    """The thesis' cases read in the time unit that makes its printed pair one physical motion.

    ``tau = rt.time_unit_from_pair(-5 deg, 0.75, 0.0794)``; both printed cases (``omega_bar =
    0.75`` and ``0.5``, slow branch) are then classified with the constant Jacobian, and the same
    spins are classified in the current unit ``sqrt(R/g)`` for comparison.
    """
    tp = THESIS_PAIR
    phi = math.radians(tp["phi0_deg"])
    tau = rt.time_unit_from_pair(phi, tp["omega_bar"], tp["Omega_bar"], vals)
    out: dict[str, Any] = {"tau_s": tau, "length_g_tau2_m": vals["g"] * tau**2,
                           "tau_over_current_unit": tau / _scale(vals), "thesis": tp, "cases": [],
                           "current_unit_cases": []}
    for unit, key in ((tau, "cases"), (_scale(vals), "current_unit_cases")):
        for wb in (tp["omega_bar"], tp["unstable_omega_bar"]):
            mo, lam, stable = circular_stability(cm, phi, wb / unit, vals)
            Th = 2 * math.pi / abs(mo.Omega)
            mu = np.exp(Th * lam)
            out[key].append({"omega_bar": wb, "Omega_bar": mo.Omega * unit, "stable": stable,
                             "max_real_eig": float(lam.real.max()), "Omega_over_omega": mo.Omega / mo.omega,
                             "nontrivial_multipliers": _pairs(_nontrivial(mu))})
    c = out["cases"]
    out["reproduced"] = {"Omega_bar_of_pair": abs(c[0]["Omega_bar"] - tp["Omega_bar"]) < 1e-9,
                         "omega_bar_0.75_stable": c[0]["stable"], "omega_bar_0.5_unstable": not c[1]["stable"],
                         "multipliers_of_pair": False}
    out["reproduced_in_current_unit"] = {"omega_bar_0.75_stable": out["current_unit_cases"][0]["stable"],
                                         "omega_bar_0.5_unstable": not out["current_unit_cases"][1]["stable"]}
    return out


def circular_case(cm: CompiledModel, vals: dict, phi0_deg: float, omega_bar: float) -> dict:
    """Floquet validation of one circular motion."""
    sc = _scale(vals)
    ref, mo = rt.circular_motion(cm, math.radians(phi0_deg), omega=omega_bar / sc, p=vals)
    lin = circular_linearization(cm, ref, mo)
    periodic, J = lin.periodic, lin.J
    Th = periodic.period
    fr = floquet(periodic)
    T, _ = rt.heading_frame(periodic.states, mo.Omega)
    T0 = T(0.0)
    X_const = np.linalg.solve(T0, sl.expm(Th * J) @ T0)
    mono_diff = float(np.abs(fr.monodromy - X_const).max() / np.abs(X_const).max())
    rho_const = np.exp(Th * np.linalg.eigvals(J))
    a, b = _nontrivial(fr.multipliers), _nontrivial(rho_const)
    if len(a) != len(b):
        raise RuntimeError(f"nontrivial multipliers differ in number: {a} vs {b}")
    mult_diff = float(max((np.min(np.abs(z - b)) / abs(z) for z in a), default=0.0))
    triv = np.sort(np.abs(fr.multipliers[np.abs(fr.multipliers - 1.0) <= 1e-4] - 1.0))
    lam = np.linalg.eigvals(J)
    stable = bool(lam.real.max() <= MARGINAL_RTOL * max(1.0, float(np.abs(lam).max())))
    return {"phi0_deg": phi0_deg, "omega_bar": omega_bar, "Omega_bar": mo.Omega * sc,
            "omega": mo.omega, "Omega": mo.Omega, "period": Th, "radius_contact": mo.radius_contact,
            "multipliers": _pairs(fr.multipliers), "nontrivial_multipliers": _pairs(a),
            "multipliers_constant": _pairs(rho_const), "monodromy_rel_diff": mono_diff,
            "multiplier_rel_diff": mult_diff,
            "trivial_multiplier_max_dev": float(triv.max()) if triv.size else 0.0,
            "stable": stable}


def stability_map(cm: CompiledModel, vals: dict, phis_deg: np.ndarray,
                  omega_bars: np.ndarray) -> np.ndarray:
    """1 stable, 0 unstable, -1 no circular motion, over (phi0, ω̄) (slow branch)."""
    sc = _scale(vals)
    out = np.empty((len(phis_deg), len(omega_bars)))
    for i, ph in enumerate(phis_deg):
        for j, wb in enumerate(omega_bars):
            try:
                out[i, j] = float(circular_stability(cm, math.radians(ph), wb / sc, vals)[2])
            except Exception:  # no real heading rate: no circular motion there
                out[i, j] = -1.0
    return out


def run(*, out: Path | None = None, quick: bool = False) -> dict:
    cm = rt.model()
    g = GEOMETRY
    res: dict[str, Any] = {"nondimensionalization": "omega_bar = omega*sqrt(R/g), Omega_bar = Omega*sqrt(R/g), R = rho + a"}
    # Floquet validation
    vals = rt.torus_parameters("solid", **g)
    cases = [circular_case(cm, vals, ph, wb) for ph, wb in (CASES[:2] if quick else CASES)]
    res["circular"] = cases
    res["thesis_unit"] = thesis_unit_cases(cm, vals)
    res["floquet_vs_constant_max_diff"] = {
        "monodromy_rel": max(c["monodromy_rel_diff"] for c in cases),
        "nontrivial_multipliers_rel": max(c["multiplier_rel_diff"] for c in cases),
        "trivial_multipliers_abs_dev_from_1": max(c["trivial_multiplier_max_dev"] for c in cases)}
    # hoop limit
    r = g["rho"]
    vcs = [straight_critical_speed(cm, rt.torus_parameters("solid", **{**g, "mu": mu})) for mu in MUS]
    exact = math.sqrt(g["g"] * r) / 2
    res["hoop_limit"] = {"r": r, "mu": MUS, "v_c": vcs, "rel_diff": [abs(v - exact) / exact for v in vcs],
                         "analytic": exact}
    # thresholds
    th: dict[str, Any] = {"geometry": {"rho": g["rho"], "a": g["mu"] * g["rho"], "b": g["sigma"] * g["mu"] * g["rho"],
                                       "m": g["m"], "g": g["g"]}}
    for kind in ("solid", "hollow"):
        v = rt.torus_parameters(kind, **g)
        th[kind] = {"straight_v_c": straight_critical_speed(cm, v),
                    "vertical_spin_omega_c": vertical_spin_threshold(cm, v), "A": v["A"], "C": v["C"]}
    res["thresholds"] = th
    # thresholds as functions of the cross-section ratio (both mass distributions)
    mus = [0.0, 0.1, 0.3, 0.5] if quick else [0.0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.7]
    res["thresholds_vs_mu"] = {"mu": mus}
    for kind in ("solid", "hollow"):
        ps = [rt.torus_parameters(kind, **{**g, "mu": mu}) for mu in mus]
        res["thresholds_vs_mu"][kind] = {"straight_v_c": [straight_critical_speed(cm, v) for v in ps],
                                         "vertical_spin_omega_c": [vertical_spin_threshold(cm, v) for v in ps]}
    # stability maps
    phis = np.linspace(-30, 30, 7 if quick else 25)
    wbs = np.linspace(0.05, 3.0, 7 if quick else 30)
    maps = {}
    for kind in ("solid", "hollow"):
        for mu in ((0.2,) if quick else (0.05, 0.2, 0.5)):
            v = rt.torus_parameters(kind, **{**g, "mu": mu})
            maps[f"{kind}_mu{mu}"] = stability_map(cm, v, phis, wbs)
    # gyroscopic stabilization (Ch. 9): enough spin stabilizes each steady motion
    gyro = {}
    for kind in ("solid", "hollow"):
        v = rt.torus_parameters(kind, **g)
        vc, oc = th[kind]["straight_v_c"], th[kind]["vertical_spin_omega_c"]
        st = [bool(circular_stability_straight(cm, x, v)) for x in (0.9 * vc, 1.1 * vc)]
        sp = [bool(_stable(vertical_spin_jacobian(cm, x, v))) for x in (0.9 * oc, 1.1 * oc)]
        gyro[kind] = {"straight_unstable_below_stable_above": (not st[0]) and st[1],
                      "vertical_spin_unstable_below_stable_above": (not sp[0]) and sp[1]}
    for k, m in maps.items():
        col_lo, col_hi = m[:, 0], m[:, -1]
        gyro.setdefault("maps", {})[k] = {"stable_fraction_lowest_spin": float(np.mean(col_lo == 1)),
                                          "stable_fraction_highest_spin": float(np.mean(col_hi == 1))}
    res["gyroscopic_stabilization"] = gyro
    res["stability_maps"] = {"phi0_deg": phis.tolist(), "omega_bar": wbs.tolist(),
                             "maps": {k: m.tolist() for k, m in maps.items()}}
    if out is not None:
        _plot(res, out)
    return res


def _plot(res: dict, out: Path) -> None:
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    from nhcontrol.plotting.style import PALETTE, cite, new_figure, savefig

    names = []
    hl = res["hoop_limit"]
    fig, ax = new_figure(figsize=(5.5, 3.8), title="Rolling torus, straight rolling: hoop limit")
    mu = np.asarray(hl["mu"])
    ax.plot(mu, hl["v_c"], "o-", label="solid torus (third procedure)")
    ax.axhline(hl["analytic"], color="k", ls="--", label=r"hoop, closed form $\sqrt{g r}/2$")
    ax.set_xlabel(r"cross-section ratio $\mu = a/\rho$ (-)")
    ax.set_ylabel(r"critical speed $v_c$ (m/s)")
    ax.legend()
    cite(fig, "thesis", "Sect. 6.3 (derived here)",
         extra="Critical speed of straight rolling as the torus cross-section shrinks to the hoop.")
    names.append(savefig(fig, out, "rolling_torus_hoop_limit").name)

    sm = res["stability_maps"]
    keys = list(sm["maps"])
    ncol = max(1, len(keys) // 2)
    nrow = len(keys) // ncol
    fig, axes = new_figure(nrow, ncol, figsize=(3.2 * ncol, 3.0 * nrow), squeeze=False,
                           title="Rolling torus, circular steady motion: linear stability "
                                 "(constant Jacobian)")
    cmap = ListedColormap(["0.85", PALETTE[1], PALETTE[0]])   # none, unstable, stable
    for ax, k in zip(axes.ravel(), keys):
        ax.pcolormesh(sm["omega_bar"], sm["phi0_deg"], np.asarray(sm["maps"][k]), cmap=cmap,
                      vmin=-1, vmax=1, shading="nearest")
        ax.set_title(k.replace("_mu", r", $\mu$="))
        ax.set_xlabel(r"spin $\bar\omega = \omega\sqrt{R/g}$ (-)")
    for row in axes:
        row[0].set_ylabel(r"lean $\varphi_0$ (deg)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in (PALETTE[0], PALETTE[1], "0.85")]
    axes[0][-1].legend(handles, ["stable", "unstable", "no motion"], loc="upper right")
    cite(fig, "thesis", "Sect. 6.3 (derived here)",
         extra=r"R = outer radius; $\mu$ = cross-section ratio a/ρ; grey: no circular motion "
               "with this lean and spin.")
    names.append(savefig(fig, out, "rolling_torus_stability_maps").name)

    fig, ax = new_figure(figsize=(4.6, 4.6), title="Rolling torus: Floquet multipliers")
    th = np.linspace(0, 2 * np.pi, 400)
    ax.plot(np.cos(th), np.sin(th), "k-", lw=0.6, label="unit circle")
    for c in res["circular"]:
        z = np.asarray(c["multipliers"])
        ax.plot(z[:, 0], z[:, 1], "o", mfc="none",
                label=rf"$\varphi_0$={c['phi0_deg']}°, $\bar\omega$={c['omega_bar']}")
        zc = np.asarray(c["multipliers_constant"])
        ax.plot(zc[:, 0], zc[:, 1], "k.", ms=3)
    ax.plot([], [], "k.", ms=3, label=r"$\exp(T\,\mathrm{eig}\,J)$, constant Jacobian")
    ax.set_xlabel(r"Re $\rho$ (-)")
    ax.set_ylabel(r"Im $\rho$ (-)")
    ax.set_aspect("equal")
    ax.legend()
    cite(fig, "thesis", "Sect. 6.3.8",
         extra="Circles: multipliers of the periodic LTV linearization (monodromy matrix); "
               "dots: from the constant Jacobian after the change of variables (6.76).")
    names.append(savefig(fig, out, "rolling_torus_multipliers").name)
    res["figures"] = names


def summary(res: dict) -> str:
    f = res["floquet_vs_constant_max_diff"]
    lines = ["Rolling elliptic torus (Sect. 6.3), " + res["nondimensionalization"],
             f"  Floquet vs constant Jacobian: monodromy rel. diff {f['monodromy_rel']:.1e}, nontrivial "
             f"multipliers {f['nontrivial_multipliers_rel']:.1e}, trivial multipliers |rho-1| <= "
             f"{f['trivial_multipliers_abs_dev_from_1']:.1e} (Jordan blocks)"]
    hl = res["hoop_limit"]
    lines.append(f"  hoop limit: v_c(mu=0) = {hl['v_c'][-1]:.12f} m/s vs sqrt(g r)/2 = {hl['analytic']:.12f} "
                 f"(rel {hl['rel_diff'][-1]:.1e}); v_c(mu={hl['mu'][0]}) = {hl['v_c'][0]:.6f}")
    for kind in ("solid", "hollow"):
        t = res["thresholds"][kind]
        lines.append(f"  {kind:6s}: straight v_c = {t['straight_v_c']:.6f} m/s, vertical spin Omega_c = "
                     f"{t['vertical_spin_omega_c']:.6f} rad/s")
    for kind in ("solid", "hollow"):
        g = res["gyroscopic_stabilization"][kind]
        lines.append(f"  {kind:6s}: straight rolling unstable below / stable above v_c: "
                     f"{g['straight_unstable_below_stable_above']}; vertical spin likewise: "
                     f"{g['vertical_spin_unstable_below_stable_above']}")
    tu = res["thesis_unit"]
    lines.append(f"  thesis' pair as one motion: time unit tau = {tu['tau_s']:.6f} s (= {tu['tau_over_current_unit']:.4f} "
                 f"sqrt(R/g)); omega_bar 0.75 -> Omega_bar {tu['cases'][0]['Omega_bar']:.4f}, stable "
                 f"{tu['cases'][0]['stable']}; omega_bar 0.5 stable {tu['cases'][1]['stable']} (thesis: stable, unstable); "
                 f"in sqrt(R/g): {tu['current_unit_cases'][0]['stable']}, {tu['current_unit_cases'][1]['stable']}")
    for c in res["circular"]:
        nz = ", ".join(f"{a:+.6f}{b:+.6f}i" for a, b in c["nontrivial_multipliers"])
        lines.append(f"  phi0 = {c['phi0_deg']:+.1f} deg, omega_bar = {c['omega_bar']}, Omega_bar = "
                     f"{c['Omega_bar']:.6f}: multipliers {nz} -> {'stable' if c['stable'] else 'unstable'}")
    return "\n".join(lines)
