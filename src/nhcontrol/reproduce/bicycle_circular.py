"""``nhcontrol reproduce bicycle-circular``: hands-free steady turns of the benchmark bicycle.

Compares with Basu-Mandal, Chatterjee & Papadopoulos, Proc. R. Soc. A 463 (2007) 1983-2003
(the thesis names the circular motions as future work, Ch. 9). Library calls only:
[`nhcontrol.models.bicycle_turns`][nhcontrol.models.bicycle_turns] (steady-turn equations,
capsize bifurcation, continuation) and
[`nhcontrol.analysis.steady_turns`][nhcontrol.analysis.steady_turns] (constant Jacobian,
Floquet check, stability boundaries), [`nhcontrol.simulate.turn_simulation`][nhcontrol.simulate.turn_simulation].

Families (speed ``v = rho_R omega_R``; lean right positive, steer in Meijaard's sign):

* ``i_handlebar_forward``: from the capsize bifurcation of straight running at
  ``v_c = 6.0243`` m/s down to rest;
* ``ii_handlebar_reversed``: from the capsize bifurcation of straight running with the handlebar
  reversed to flat spinning at high speed;
* ``iii_pivoting``: through the pivoting motion with the rear wheel at rest; its ``omega_R < 0``
  half is reported time-reversed (same configurations, ``v > 0``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any


from ..analysis import stable_ranges, turn_floquet, turn_stability
from ..models import benchmark_bicycle as bb
from ..models import bicycle_turns as bt
from ..simulate import turn_simulation

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.reference import Reference

__all__ = ["run", "summary", "turn_point", "families", "MEIJAARD_CAPSIZE"]

MEIJAARD_CAPSIZE = 6.024262
"""Capsize speed of the benchmark, Meijaard et al. (2007), Table 2 [m/s]."""


def turn_point(cm: CompiledModel, t: "bt.SteadyTurn") -> dict:
    """JSON point of a turn."""
    s = turn_stability(cm, t)
    return {"v": t.speed, "lean_deg": t.lean_deg, "steer_deg": t.steer_deg, "radius_m": t.radius,
            "Omega": t.Omega, "omega_R": t.omega_R, "stable": s.stable, "max_real_eig": s.max_real,
            "residual": t.residual}


def families(cm: CompiledModel, *, quick: bool = False) -> dict[str, list]:
    """The three families ([`families()`][nhcontrol.models.bicycle_turns.families])."""
    fams, missing = bt.families(cm, max_step=0.2 if quick else 0.06, max_speed=15.0 if quick else 30.0,
                                max_rate=30.0 if quick else 60.0)
    if missing:
        raise RuntimeError(f"benchmark bicycle: families not found: {missing}")
    return fams


def _pick(cm: CompiledModel, fams: dict, quick: bool) -> list[tuple[str, Any]]:
    """Points for the Floquet and simulation checks: stable ones and clearly unstable ones."""
    out = []
    for name, fam in fams.items():
        stab = [turn_stability(cm, t) for t in fam]
        stable = [t for t, s in zip(fam, stab) if s.stable and s.max_real < -0.05]
        unstable = [t for t, s in zip(fam, stab) if 0.5 < s.max_real < 5.0 and abs(t.Omega) > 1.0]
        if stable:
            out.append((name, stable[len(stable) // 2]))
        if unstable and (not quick or name == "i_handlebar_forward"):
            out.append((name, unstable[len(unstable) // 2]))
    return out


def run(*, out: Path | None = None, quick: bool = False) -> dict:
    cm = bb.model()
    res: dict[str, Any] = {"reference": "Basu-Mandal, Chatterjee & Papadopoulos, Proc. R. Soc. A 463 (2007) 1983-2003",
                           "speed_definition": "v = rho_R * omega_R (rear-wheel spin rate times radius)",
                           "sign_convention": "lean right positive; steer in Meijaard's sign (right positive)"}
    v_c = bt.capsize_speed(cm)
    v_b, _ = bt.bifurcation_speed(cm)
    res["capsize_speed_straight_running"] = v_c
    res["capsize_bifurcation_speed"] = v_b
    res["capsize_meijaard_2007"] = MEIJAARD_CAPSIZE
    res["capsize_bifurcation_minus_straight"] = v_b - v_c
    res["capsize_speed_handlebar_reversed"] = bt.capsize_speed(cm, steer=math.pi)
    fams = families(cm, quick=quick)
    res["families"] = {k: [turn_point(cm, t) for t in f] for k, f in fams.items()}
    res["max_residual"] = max(p["residual"] for f in res["families"].values() for p in f)
    res["stable_ranges"] = {k: stable_ranges(cm, f) for k, f in fams.items()}
    # independent admissibility check of a few turns (inverse dynamics, Reference.check)
    checks = []
    for k, f in fams.items():
        for t in (f[len(f) // 3], f[2 * len(f) // 3]):
            rep = bt.turn_reference(cm, t).check(cm)
            checks.append(float(rep.max_dynamics))
    res["reference_check_max_dynamics"] = max(checks)
    picks = _pick(cm, fams, quick)
    fl, sims = [], []
    for name, t in picks:
        f = turn_floquet(cm, t)
        fl.append({"family": name, "v": t.speed, "lean_deg": t.lean_deg, **f})
        s = turn_simulation(cm, t, duration=10.0)
        st = turn_stability(cm, t)
        row = {"family": name, "v": t.speed, "lean_deg": t.lean_deg, "steer_deg": t.steer_deg,
               "stable": st.stable, "max_real_eig": st.max_real, **s,
               "agrees": bool(s["stays_within"] and not s["diverges"]) if st.stable else bool(s["diverges"])}
        if st.stable and not row["agrees"]:     # small basin? the same run from a 0.1 % perturbation
            s2 = turn_simulation(cm, t, duration=10.0, perturbation=0.001)
            row["at_0.1_percent"] = s2
            row["agrees_at_0.1_percent"] = bool(s2["stays_within"] and not s2["diverges"])
        sims.append(row)
    res["floquet_checks"] = fl
    res["simulation_checks"] = sims
    res["paper_statements"] = _statements(res)
    if out is not None:
        _plot(res, Path(out))
    return res


def _statements(res: dict) -> list[dict]:
    f = res["families"]
    f1, f2, f3 = f["i_handlebar_forward"], f["ii_handlebar_reversed"], f["iii_pivoting"]
    end1, end2 = f1[-1], f2[-1]
    sr = res["stable_ranges"]
    return [
        {"paper": "three distinct families of hands-free circular motions",
         "computed": f"three families found: {len(f1)}, {len(f2)}, {len(f3)} points"},
        {"paper": "(i) handlebar forward, from capsize bifurcation, ending in unstable static equilibrium, frame "
                  "upright, front wheel almost perpendicular",
         "computed": f"starts at v = {res['capsize_bifurcation_speed']:.7f} m/s; ends at v = {end1['v']:.3g} m/s with "
                     f"lean {end1['lean_deg']:.3g} deg, steer {end1['steer_deg']:.4g} deg; unstable throughout: "
                     f"{not any(p['stable'] for p in f1)}"},
        {"paper": "(ii) handlebar reversed, from capsize bifurcation, ending steered straight, spinning infinitely "
                  "fast in small circles lying flat",
         "computed": f"starts at v = {f2[0]['v']:.5g} m/s (handlebar-reversed capsize); last point v = {end2['v']:.4g} "
                     f"m/s, lean {end2['lean_deg']:.4g} deg, steer {end2['steer_deg']:.5g} deg, radius "
                     f"{end2['radius_m']:.4g} m"},
        {"paper": "(iii) joins flat spinning (handlebar forward) to a handlebar-reversed limit at infinite speed, "
                  "through pivoting with the rear wheel not rotating and the bicycle virtually upright",
         "computed": f"ends: v = {f3[0]['v']:.4g} m/s lean {f3[0]['lean_deg']:.4g} deg steer {f3[0]['steer_deg']:.4g} "
                     f"deg and v = {f3[-1]['v']:.4g} m/s lean {f3[-1]['lean_deg']:.4g} deg steer "
                     f"{f3[-1]['steer_deg']:.4g} deg; pivoting point: min |v| = "
                     f"{min(abs(p['v']) for p in f3):.2g} m/s"},
        {"paper": "small sections of two families are stable",
         "computed": "stable sections: " + "; ".join(
             f"{k}: {_section_text(r)}" for k, rs in sr.items() for r in rs)},
    ]


def _boundary_text(b: dict) -> str:
    text = f"{b['kind']} at v = {b['v']:.6f} m/s"
    if "crossing" in b:
        re_, im = b["eigenvalue"]
        lam = f"{re_:+.1e} ± {im:.4g}i" if b["crossing"] == "complex pair" else f"{re_:+.1e}"
        text += f" ({b['crossing']} crossing, λ = {lam} 1/s)"
    return text


def _section_text(r: dict) -> str:
    """One stable section in words: its speed range over its turns, how it begins and ends, and
    any fold of speed inside it."""
    ends = "; ".join(_boundary_text(b) for b in r["boundaries"])
    folds = "".join(f"; fold (speed {f['kind']}) at v = {f['v']:.6f} m/s, still stable"
                    for f in r["folds"])
    return f"v in [{r['v_min']:.6f}, {r['v_max']:.6f}] m/s over its turns ({ends}{folds})"


def _plot(res: dict, out: Path) -> None:
    from nhcontrol.plotting._turns import plot_turn_families
    from nhcontrol.plotting.style import cite, savefig

    fig, _ = plot_turn_families(res["families"], res["capsize_bifurcation_speed"],
                                "Benchmark bicycle: hands-free steady turns")
    cite(fig, "Basu-Mandal, Chatterjee & Papadopoulos, Proc. R. Soc. A 463 (2007) (families compared in the docs)", "",
         extra="Dotted: capsize speed of straight running (Meijaard et al. 2007). Computed here by continuation "
               "of the steady-turn equations.")
    res["figures"] = [savefig(fig, out, "bicycle_circular_families").name]


def summary(res: dict) -> str:
    lines = ["Hands-free steady turns of the benchmark bicycle (Basu-Mandal et al. 2007)",
             f"  capsize speed of straight running {res['capsize_speed_straight_running']:.9f} m/s "
             f"(Meijaard: {res['capsize_meijaard_2007']}), bifurcation of the turns "
             f"{res['capsize_bifurcation_speed']:.9f} m/s (diff {res['capsize_bifurcation_minus_straight']:.1e})",
             f"  handlebar reversed: capsize {res['capsize_speed_handlebar_reversed']:.6f} m/s",
             f"  max residual of the steady-turn equations {res['max_residual']:.1e}; "
             f"Reference.check dynamics {res['reference_check_max_dynamics']:.1e}"]
    for k, pts in res["families"].items():
        lines.append(f"  {k}: {len(pts)} points, v in [{min(p['v'] for p in pts):.3f}, "
                     f"{max(p['v'] for p in pts):.3f}] m/s")
        for r in res["stable_ranges"][k]:
            lines.append(f"    stable section: {_section_text(r)}, lean "
                         f"{r['lean_deg_from']:.2f} to {r['lean_deg_to']:.2f} deg")
    for f in res["floquet_checks"]:
        lines.append(f"  Floquet {f['family']} v={f['v']:.3f}: rho {f['spectral_radius_nontrivial']:.6f} vs "
                     f"{f['spectral_radius_constant']:.6f}, monodromy rel diff {f['monodromy_rel_diff']:.1e}, "
                     f"agree {f['agree']}")
    for s in res["simulation_checks"]:
        lines.append(f"  simulation {s['family']} v={s['v']:.3f} stable={s['stable']}: e0 {s['e0']:.2e}, "
                     f"e_max {s['e_max']:.2e}, e_end {s['e_end']:.2e} -> agrees {s['agrees']}"
                     + (f" (from 0.1 %: agrees {s['agrees_at_0.1_percent']})" if "agrees_at_0.1_percent" in s else ""))
    return "\n".join(lines)
