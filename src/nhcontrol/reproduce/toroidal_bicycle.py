"""``nhcontrol reproduce toroidal-bicycle``: the bicycle with elliptic toroidal wheels (Sect. 4.5.1).

For every wheel geometry the minimal 10×10 Jacobian of the steady forward motion (third
numerical procedure, partition
[`nhcontrol.models.toroidal_bicycle.PARTITION`][nhcontrol.models.toroidal_bicycle.PARTITION]) is
identified exactly as ``J(v) = J0 + v J1 + v² J2`` from three speeds (the Jacobian is a
quadratic polynomial in the speed; the identification is checked at a fourth speed and the
residual reported). The self-stable speed range ``[v_w, v_c]`` (weave and capsize speeds) is
found by Brent's method on the spectral abscissa of the lean–steer block.

Sweeps (trends of thesis Ch. 9): the rear torus aspect ratio ``mu_R`` (circular cross-section),
the front one ``mu_F``, both together, and the cross-section ratio ``sigma`` at fixed ``mu``.
With ``mu = sigma = 0`` the model is the hoop benchmark and must give Meijaard's speeds.
"""

from __future__ import annotations

import math

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import linearization as _lin
from ..analysis import critical_points, structural_zeros
from ..models import toroidal_bicycle as tb
from .bicycle_benchmark import jacobian_polynomial

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.linearization.partition import Partition

__all__ = ["run", "summary", "speed_polynomial", "stable_range", "steer_tilt_trend", "STEER_TILTS"]

MEIJAARD_VW = 4.292382536341
"""Meijaard et al. (2007), Table 2: weave and capsize speeds of the benchmark [m/s]."""
MEIJAARD_VC = 6.024262015388

V_MAX = 20.0
_GRID = np.linspace(0.25, V_MAX, 80)


def speed_polynomial(cm: CompiledModel, p: np.ndarray) -> tuple[tuple[np.ndarray, ...], float]:
    """``(J0, J1, J2)`` with ``J(v) = J0 + v J1 + v² J2`` and the relative residual at ``v = 7.3``."""
    part = _lin.Partition.from_dict(tb.PARTITION)

    def J(v: float) -> np.ndarray:
        return np.asarray(_lin.linearize(cm, tb.steady_forward(cm, v, p=p), part).A)

    J0, J1, J2 = jacobian_polynomial(J, speeds=(0.0, 2.0, 4.0))
    vt = 7.3
    Jt = J(vt)
    res = float(np.max(np.abs(J0 + vt * J1 + vt**2 * J2 - Jt)) / np.max(np.abs(Jt)))
    return (J0, J1, J2), res


def stable_range(poly: tuple[np.ndarray, ...]) -> dict[str, Any]:
    """Weave speed ``vw``, capsize speed ``vc`` and the width of the self-stable range.

    ``vc`` is None when the bicycle stays stable up to `V_MAX` (width measured to
    ``V_MAX``, flagged ``"open": True``); both are None when no speed in ``(0, V_MAX]`` is
    self-stable (width 0).
    """
    J0, J1, J2 = poly
    keep = structural_zeros(J0 + 3.1 * J1 + 3.1**2 * J2).keep  # same structure at every v

    def block(v: float) -> np.ndarray:
        return (J0 + v * J1 + v * v * J2)[np.ix_(keep, keep)]

    cps = critical_points(block, _GRID, coalescences=False)
    vw = next((c.value for c in cps if c.direction == "stabilizing"), None)
    vc = None
    if vw is not None:
        vc = next((c.value for c in cps if c.direction == "destabilizing" and c.value > vw), None)
    width = 0.0 if vw is None else (V_MAX if vc is None else vc) - vw
    return {"vw": vw, "vc": vc, "width": width, "open": vw is not None and vc is None}


def _case(cm: CompiledModel, **kw: float) -> dict[str, Any]:
    poly, res = speed_polynomial(cm, cm.param_vector(**kw))
    return {"parameters": kw, **stable_range(poly), "polynomial_residual": res}


def _sweeps(cm: CompiledModel, quick: bool) -> dict[str, list[dict[str, Any]]]:
    mus_r = [0.0, 0.1, 0.2, 0.3] if quick else [0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3]
    mus_f = [0.0, 0.01, 0.02] if quick else [0.0, 0.005, 0.01, 0.015, 0.02, 0.03, 0.05]
    sigmas = [1.0, 0.5, 0.2] if quick else [1.0, 0.8, 0.6, 0.5, 0.4, 0.3, 0.2]
    return {
        "rear_mu": [_case(cm, mu_R=m, sigma_R=1.0) for m in mus_r],
        "front_mu": [_case(cm, mu_F=m, sigma_F=1.0) for m in mus_f],
        "both_mu": [_case(cm, mu_R=m, mu_F=m, sigma_R=1.0, sigma_F=1.0) for m in mus_f],
        "sigma": [_case(cm, mu_R=0.2, mu_F=0.2, sigma_R=s, sigma_F=s) for s in sigmas],
    }


STEER_TILTS = (0.1, 0.2, math.pi / 10, 0.4, 0.5)
"""Steer axis tilts [rad] of the steer-tilt trend (Table 4.1: pi/10)."""
TILT_WHEELS: dict[str, dict[str, float]] = {
    "hoops": {},
    "toroidal_mu_R0.1_mu_F0.01": {"mu_R": 0.1, "mu_F": 0.01, "sigma_R": 1.0, "sigma_F": 1.0},
}


def steer_tilt_trend(cm: CompiledModel, *, quick: bool = False) -> dict[str, Any]:
    """Self-stable speed range against the steer axis tilt ``nu`` (thesis Ch. 9)."""
    nus = (0.2, math.pi / 10, 0.4) if quick else STEER_TILTS
    wheels = {"toroidal_mu_R0.1_mu_F0.01": TILT_WHEELS["toroidal_mu_R0.1_mu_F0.01"]} if quick else TILT_WHEELS
    out: dict[str, Any] = {"nu_rad": list(nus), "nu_deg": [math.degrees(n) for n in nus], "wheels": {}}
    for name, kw in wheels.items():
        cases = [_case(cm, nu=n, **kw) for n in nus]
        w = [c["width"] for c in cases]
        out["wheels"][name] = {"parameters": kw, "vw": [c["vw"] for c in cases], "vc": [c["vc"] for c in cases],
                               "width": w, "width_increases_with_nu": bool(np.all(np.diff(w) > 0)),
                               "nu_of_widest_deg": math.degrees(nus[int(np.argmax(w))]),
                               "range_shifts_up_with_nu": bool(all(c["vw"] is not None and c["vc"] is not None
                                                                   for c in cases)
                                                               and np.all(np.diff([c["vw"] for c in cases]) > 0)
                                                               and np.all(np.diff([c["vc"] for c in cases]) > 0))}
    out["thesis_statement"] = "the self-stability velocity range increases as the steering axis tilt angle increases"
    parts = []
    for name, d in out["wheels"].items():
        parts.append(f"{name}: width {', '.join(f'{x:.3f}' for x in d['width'])} m/s at nu = "
                     f"{', '.join(f'{x:.1f}' for x in out['nu_deg'])} deg (widest at {d['nu_of_widest_deg']:.1f} deg); "
                     f"v_w and v_c both rise with nu")
    out["computed_statement"] = "; ".join(parts)
    out["agrees"] = all(d["width_increases_with_nu"] for d in out["wheels"].values())
    return out


def run(*, out: Path | None = None, quick: bool = False) -> dict:
    """Benchmark check (``mu = sigma = 0``) and the four sweeps, for both wheel-inertia options."""
    result: dict[str, Any] = {"jacobian_shape": None}
    for inertia in (("benchmark",) if quick else ("benchmark", "torus")):
        cm = tb.model(wheel_inertia=inertia)
        block: dict[str, Any] = {}
        if inertia == "benchmark":
            hoop = _case(cm)
            block["hoop_limit"] = {
                **hoop,
                "vw_rel_error_vs_meijaard": abs(hoop["vw"] - MEIJAARD_VW) / MEIJAARD_VW,
                "vc_rel_error_vs_meijaard": abs(hoop["vc"] - MEIJAARD_VC) / MEIJAARD_VC,
            }
            ref = tb.steady_forward(cm, 5.0)
            lin = _lin.linearize(cm, ref, _lin.Partition.from_dict(tb.PARTITION))
            result["jacobian_shape"] = list(np.shape(lin.A))
        block["sweeps"] = _sweeps(cm, quick)
        result[inertia] = block
    result["trends"] = _trends(result["benchmark"]["sweeps"])
    result["steer_tilt_trend"] = steer_tilt_trend(tb.model(wheel_inertia="benchmark"), quick=quick)
    if out is not None:
        _plot(result, out)
        result["figures"].append(_plot_tilt(result["steer_tilt_trend"], Path(out)))
    return result


def _trends(sw: dict[str, list[dict[str, Any]]]) -> dict[str, bool]:
    width = {k: [c["width"] for c in v] for k, v in sw.items()}
    return {
        "rear_mu_widens_range": bool(np.all(np.diff(width["rear_mu"]) > 0)),
        "front_mu_narrows_range": bool(np.all(np.diff(width["front_mu"]) <= 0)
                                       and width["front_mu"][-1] < width["front_mu"][0]),
        "front_dominates_when_both": bool(width["both_mu"][-1] < width["both_mu"][0]),
        "elliptic_section_stabilizing": bool(width["sigma"][-1] > width["sigma"][0]),
    }


def _plot(result: dict, out: Path) -> None:
    from nhcontrol.plotting.style import cite, new_figure, savefig

    sw = result["benchmark"]["sweeps"]
    fig, axes = new_figure(1, 4, sharey=True, figsize=(13.0, 3.6),
                           title="Benchmark bicycle with elliptic toroidal wheels: self-stable "
                                 "speed range vs wheel shape")
    specs = [("rear_mu", "mu_R", r"rear wheel, circular section ($\sigma_R = 1$)",
              r"rear torus ratio $\mu_R = a_R/\rho_R$"),
             ("front_mu", "mu_F", r"front wheel, circular section ($\sigma_F = 1$)",
              r"front torus ratio $\mu_F = a_F/\rho_F$"),
             ("both_mu", "mu_R", r"both wheels ($\mu_R = \mu_F$, $\sigma = 1$)",
              r"torus ratio $\mu_R = \mu_F$"),
             ("sigma", "sigma_R", r"both wheels, $\mu_R = \mu_F = 0.2$",
              r"cross-section ratio $\sigma_R = \sigma_F = b/a$")]
    for ax, (key, par, title, xlabel) in zip(axes, specs):
        xs = [c["parameters"][par] if par in c["parameters"] else 0.0 for c in sw[key]]
        vw = [np.nan if c["vw"] is None else c["vw"] for c in sw[key]]
        vc = [np.nan if c["vc"] is None else (c["vc"]) for c in sw[key]]
        vc = [V_MAX if (c["open"]) else v for c, v in zip(sw[key], vc)]
        ax.plot(xs, vw, "o-", label=r"weave speed $v_w$")
        ax.plot(xs, vc, "s-", label=r"capsize speed $v_c$")
        ax.fill_between(xs, vw, vc, alpha=0.2, label=r"self-stable ($v_w < v < v_c$)")
        ax.set_title(title)
        ax.set_xlabel(xlabel)
    axes[0].set_ylabel("forward speed v (m/s)")
    axes[0].legend()
    cite(fig, "thesis", "the trends of Ch. 9 (wheels of Sect. 4.5.1)",
         extra=(r"Torus of each wheel: overall radius $R$ (Table 4.1) kept, centre circle "
                r"$\rho = R/(1+\mu)$, elliptic cross-section with semi-axes $a = \mu\rho$ "
                r"(radial) and $b = \sigma a$ (along the axle); $\mu = \sigma = 0$ is the hoop "
                f"benchmark (Meijaard et al. 2007). Capsize speeds above {V_MAX:g} m/s are drawn "
                f"at {V_MAX:g} m/s."))
    result["figures"] = [savefig(fig, out, "toroidal_bicycle_sweeps").name]


def _plot_tilt(tt: dict[str, Any], out: Path) -> str:
    from nhcontrol.plotting.style import cite, new_figure, savefig

    fig, ax = new_figure(figsize=(6.5, 4.2), title="Bicycle with toroidal wheels: self-stable range vs steer axis tilt")
    for (name, d), col in zip(tt["wheels"].items(), ("#0072B2", "#D55E00")):
        vw = [np.nan if v is None else v for v in d["vw"]]
        vc = [np.nan if v is None else v for v in d["vc"]]
        ax.plot(tt["nu_deg"], vw, "o-", color=col, label=f"{name}: weave speed")
        ax.plot(tt["nu_deg"], vc, "s--", color=col, label=f"{name}: capsize speed")
        ax.fill_between(tt["nu_deg"], vw, vc, color=col, alpha=0.15)
    ax.set_xlabel(r"steer axis tilt $\nu$ (deg)")
    ax.set_ylabel("forward speed v (m/s)")
    ax.legend(fontsize=7)
    cite(fig, "thesis", "Ch. 9 (trend computed here)",
         extra="Thesis: the self-stable range grows with the steer axis tilt. Computed: " + tt["computed_statement"])
    return savefig(fig, out, "toroidal_bicycle_steer_tilt").name


def summary(result: dict) -> str:
    h = result["benchmark"]["hoop_limit"]
    lines = [f"Bicycle with elliptic toroidal wheels: Jacobian {result['jacobian_shape']}",
             f"  hoop limit (mu = sigma = 0): v_w = {h['vw']:.12f}, v_c = {h['vc']:.12f} m/s "
             f"(Meijaard rel. errors {h['vw_rel_error_vs_meijaard']:.1e}, "
             f"{h['vc_rel_error_vs_meijaard']:.1e})"]
    for key, cases in result["benchmark"]["sweeps"].items():
        cells = ", ".join(f"{'/'.join(f'{v:g}' for v in c['parameters'].values())}: "
                          f"{c['width']:.3f}" for c in cases)
        lines.append(f"  {key:9s} stable-range width [m/s] ({cells})")
    lines.append("  trends (thesis Ch. 9): " + ", ".join(f"{k}={v}" for k, v in result["trends"].items()))
    if "steer_tilt_trend" in result:
        st = result["steer_tilt_trend"]
        lines.append(f"  steer tilt: thesis: {st['thesis_statement']}; computed: {st['computed_statement']} "
                     f"(agrees {st['agrees']})")
    return "\n".join(lines)
