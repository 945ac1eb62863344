"""``nhcontrol reproduce waveboard``: the waveboard with toroidal wheels (Sect. 5.5, derived here).

Reduction check: rigid torsion bar, locked rear caster, hoop wheels against the benchmark bicycle
model (an independent model) with the composite parameters of
[`nhcontrol.models.waveboard.benchmark_equivalent()`][nhcontrol.models.waveboard.benchmark_equivalent].
Then the 14 × 14 Jacobian of the
steady forward motion (third procedure, ``J(v) = J0 + v J1 + v² J2`` identified from three speeds and
checked at a fourth), its eigenvalues vs speed and the self-stable speed ranges. Then the
inverse-dynamics study of Sect. 5.5.4 (derived here, [`inverse_dynamics_study()`][nhcontrol.reproduce.waveboard.inverse_dynamics_study]): the rider's
torques ``tau_B``, ``tau_P`` along a meandering path and how the torsion-bar stiffness ``k_T`` and
the caster tilt ``nu`` change them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import linearization as _lin
from ..models import benchmark_bicycle as bb
from ..models import waveboard as wb
from .bicycle_benchmark import jacobian_polynomial
from .escooter import spectrum, stable_ranges
from nhcontrol.plotting.style import PALETTE

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.linearization.partition import Partition

__all__ = ["run", "summary", "reduction", "speed_polynomial", "inverse_dynamics_study", "harmonic_inverse",
           "caster_torus_trend", "CASTER_TILTS", "TORUS_RATIOS"]

V_MAX = 8.0
SPEEDS = np.round(np.linspace(0.25, V_MAX, 32), 10)
REDUCTION_SPEEDS = (1.0, 3.0, 6.0)
HOOPS = {"mu_R": 0.0, "mu_F": 0.0, "sigma_R": 0.0, "sigma_F": 0.0}
LOCKED_PARTITION = dict(independent=["x_b", "phi_b", "delta_F"],
                        admissible_dependent=["y_b", "psi_b", "theta_R", "theta_F"],
                        dependent=["z_b", "theta_b", "xi_R", "xi_F", "eta_R", "eta_F"])


def speed_polynomial(cm: CompiledModel, p: np.ndarray, partition: dict) -> tuple[tuple[np.ndarray, ...], float]:
    """``(J0, J1, J2)`` of ``J(v)`` and the relative residual of the fit at ``v = 5.3``."""
    part = _lin.Partition.from_dict(partition)

    def J(v: float) -> np.ndarray:
        return np.asarray(_lin.linearize(cm, wb.steady_forward(cm, v, p=p), part).A)

    poly = jacobian_polynomial(J, speeds=(0.0, 2.0, 4.0))
    Jt = J(5.3)
    res = float(np.max(np.abs(poly[0] + 5.3 * poly[1] + 5.3**2 * poly[2] - Jt)) / np.max(np.abs(Jt)))
    return poly, res


def _nontrivial(ev: np.ndarray) -> np.ndarray:
    ev = ev[np.abs(ev) > 1e-6 * np.max(np.abs(ev))]
    return np.sort_complex(ev)


def reduction() -> dict[str, Any]:
    """Locked board (hoops) vs the benchmark bicycle with `waveboard.benchmark_equivalent()`."""
    cr = wb.model(torsion=False, rear_caster=False)
    pv = cr.param_vector(**HOOPS)
    eq = wb.benchmark_equivalent()
    bcm = bb.model()
    pb = bcm.param_vector(**eq)
    rows, worst = [], 0.0
    part_w = _lin.Partition.from_dict(LOCKED_PARTITION)
    part_b = _lin.Partition.from_dict(bb.PARTITION_4_172)
    for v in REDUCTION_SPEEDS:
        e1 = _nontrivial(np.linalg.eigvals(np.asarray(_lin.linearize(cr, wb.steady_forward(cr, v, p=pv), part_w).A)))
        e2 = _nontrivial(np.linalg.eigvals(np.asarray(_lin.linearize(bcm, bb.steady_forward(bcm, v, p=pb), part_b).A)))
        if e1.shape != e2.shape:
            raise RuntimeError(f"reduction: {e1.size} eigenvalues vs {e2.size} of the benchmark model")
        worst = max(worst, float(np.max(np.abs(e1 - e2) / np.abs(e2))))
        rows.append({"v": v, "eigenvalues": [[float(z.real), float(z.imag)] for z in e1],
                     "benchmark_eigenvalues": [[float(z.real), float(z.imag)] for z in e2]})
    poly, _ = speed_polynomial(cr, pv, LOCKED_PARTITION)
    ranges = stable_ranges(poly, v_max=30.0)
    return {"parameters": {k: float(x) for k, x in eq.items()}, "wheels": "hoops (mu = sigma = 0)",
            "speeds": list(REDUCTION_SPEEDS), "eigenvalues": rows,
            "v_w": ranges[0][0] if ranges else None,
            # None: the locked board stays stable up to the end of the search (30 m/s)
            "v_c": ranges[0][1] if ranges and ranges[0][1] < 30.0 else None,
            "stable_speed_ranges": ranges, "max_rel_diff_vs_benchmark_model": worst}


# ---------------------------------------------------------------- inverse dynamics (Sect. 5.5.4)
ID_SPEED, ID_PERIOD, ID_AMPLITUDE = 2.5, 1.5, 0.05
"""Chosen meander: forward speed [m/s], period [s] (wavelength v T = 3.75 m), lateral amplitude [m]."""
ID_SHAPE = {"phi_b": 1.0 + 0.0j, "alpha": 1.0 + 0.0j}
"""Chosen shape of the rider's motion: complex amplitudes of (phi_b, alpha) up to a common factor
(rear-platform roll and twist in phase and equal, i.e. the front platform rolls twice as much)."""
ID_VARIANTS: dict[str, tuple[float, ...]] = {"k_T": (30.0, 60.0, 120.0), "nu": (0.26, 0.35, 0.44)}
"""Design variants: torsion-bar stiffness [N m/rad] and caster tilt of both casters [rad]."""
ID_CHECK_TIME, ID_CHECK_AMPLITUDES = 0.3, (0.05, 0.0125)
"""Nonlinear check: simulated time [s] and the path amplitudes [m] compared."""


def harmonic_inverse(lin: Any, omega: float, shape: dict[str, complex]) -> tuple[np.ndarray, np.ndarray]:
    """Inputs and state of the periodic motion in which the named states move as ``shape e^{jΩt}``.

    For ``Ẋ = A X + B u`` (a linearization about a steady motion) and ``u = Re(û e^{jΩt})``, the
    bounded periodic response is ``X̂ = (jΩ I − A)⁻¹ B û`` (``jΩ`` is not an eigenvalue); with as
    many prescribed states ``C X̂ = ŷ`` as inputs, ``û = (C (jΩ I − A)⁻¹ B)⁻¹ ŷ``. This is the
    inverse dynamics of the prescribed periodic motion in the linear approximation; it exists
    although the unprescribed part of the motion (the zero dynamics) is unstable, which defeats
    forward-in-time computed-torque simulation over long times (derived here).

    Returns
    -------
    u_hat : (k,) complex ndarray
    X_hat : (ns,) complex ndarray
    """
    states = list(lin.states)
    A, B = np.asarray(lin.A, dtype=float), np.asarray(lin.B, dtype=float)
    R = np.linalg.solve(1j * omega * np.eye(A.shape[0]) - A, B)
    C = np.zeros((len(shape), A.shape[0]))
    for r, name in enumerate(shape):
        C[r, states.index(name)] = 1.0
    G = C @ R
    if G.shape[0] != G.shape[1]:
        raise ValueError(f"harmonic_inverse needs as many prescribed states as inputs: {list(shape)} vs {lin.inputs}")
    u = np.linalg.solve(G, np.array(list(shape.values()), dtype=complex))
    return u, R @ u


def _sinusoid(c: complex, om: float):
    """``t -> (Re(c e^{jΩt}), its rate, its acceleration)``."""
    def f(t: float) -> tuple[float, float, float]:
        z = c * np.exp(1j * om * t)
        return float(z.real), float((1j * om * z).real), float((-(om ** 2) * z).real)
    return f


def _variant_parameters(name: str, value: float) -> dict[str, float]:
    return {"nu_R": value, "nu_F": value} if name == "nu" else {name: value}


def inverse_dynamics_study(*, nonlinear_check: bool = True) -> dict[str, Any]:
    """Rider torques along a meandering path and their dependence on ``k_T`` and ``nu``.

    The rider rolls the rear platform and twists the front one sinusoidally (`ID_SHAPE`),
    scaled so that the board's lateral position ``y_b`` meanders with amplitude
    `ID_AMPLITUDE` at speed `ID_SPEED` and period `ID_PERIOD`. The torques
    follow from [`harmonic_inverse()`][nhcontrol.reproduce.waveboard.harmonic_inverse] on the linearization of the actuated model
    (``waveboard.model(actuated=True)``) about the steady forward motion, for each design variant
    of `ID_VARIANTS` (one parameter changed at a time). With ``nonlinear_check`` the nominal
    case is also run on the nonlinear model: [`prescribed_motion()`][nhcontrol.simulate.prescribed_motion] imposes
    the same ``phi_b(t)``, ``alpha(t)`` from the periodic state (``lin.from_deviation``) and its
    torques are compared with the linear ones over `ID_CHECK_TIME` for two amplitudes.
    """
    cm = wb.model(actuated=True)
    om = 2.0 * np.pi / ID_PERIOD
    rows, curves = [], {}
    tt = np.linspace(0.0, ID_PERIOD, 121)
    nominal: dict[str, Any] = {}
    for name, values in ID_VARIANTS.items():
        for val in values:
            over = _variant_parameters(name, val)
            p = cm.param_vector(**over)
            lin = _lin.linearize(cm, wb.steady_forward(cm, ID_SPEED, p=p), wb.PARTITION)
            u, X = harmonic_inverse(lin, om, ID_SHAPE)
            S = list(lin.states)
            scale = ID_AMPLITUDE / abs(X[S.index("y_b")])
            u, X = u * scale, X * scale
            amp = {s: float(abs(X[S.index(s)])) for s in ("phi_b", "alpha", "delta_R", "delta_F", "psi_b")}
            row = {"parameter": name, "value": float(val),
                   "phi_b_amplitude_deg": float(np.degrees(amp["phi_b"])),
                   "alpha_amplitude_deg": float(np.degrees(amp["alpha"])),
                   "delta_R_amplitude_deg": float(np.degrees(amp["delta_R"])),
                   "delta_F_amplitude_deg": float(np.degrees(amp["delta_F"])),
                   "psi_b_amplitude_deg": float(np.degrees(amp["psi_b"]))}
            for j, inp in enumerate(lin.inputs):
                row[f"{inp}_peak"] = float(abs(u[j]))                 # N m, amplitude of the sinusoid
                row[f"{inp}_rms"] = float(abs(u[j]) / np.sqrt(2.0))
                row[f"{inp}_phase_deg"] = float(np.degrees(np.angle(u[j])))
            rows.append(row)
            curves[(name, float(val))] = np.real(np.multiply.outer(np.exp(1j * om * tt), u))
            if over == {"k_T": wb.PARAMETERS["k_T"]}:
                nominal = {"cm": cm, "p": p, "lin": lin, "u": u / scale, "X": X / scale,
                           "scale": scale}
    result: dict[str, Any] = {
        "speed": ID_SPEED, "period": ID_PERIOD, "wavelength": ID_SPEED * ID_PERIOD,
        "lateral_amplitude": ID_AMPLITUDE,
        "shape": {k: [float(v.real), float(v.imag)] for k, v in ID_SHAPE.items()},
        "units": {"peak": "N m (amplitude)", "rms": "N m", "k_T": "N m/rad", "nu": "rad"},
        "variants": rows,
    }
    for name in ID_VARIANTS:
        sel = [r for r in rows if r["parameter"] == name]
        result[f"relative_change_over_{name}"] = {
            f"{inp}_peak": float((sel[-1][f"{inp}_peak"] - sel[0][f"{inp}_peak"]) / sel[1][f"{inp}_peak"])
            for inp in wb.INPUTS}
    if nonlinear_check and nominal:
        result["nonlinear_check"] = _nonlinear_check(nominal, om)
    result["_curves"] = (tt, curves)
    return result


def _nonlinear_check(nom: dict[str, Any], om: float) -> dict[str, Any]:
    from ..simulate import prescribed_motion

    cm, p, lin = nom["cm"], nom["p"], nom["lin"]
    ref = wb.steady_forward(cm, ID_SPEED, p=p)
    S = list(lin.states)
    ts = np.linspace(0.0, ID_CHECK_TIME, 31)
    out = []
    for Y in ID_CHECK_AMPLITUDES:
        k = Y / abs(nom["X"][S.index("y_b")])
        u, X = nom["u"] * k, nom["X"] * k
        x0, xd0 = lin.from_deviation(ref, 0.0, X.real)
        pres = {s: _sinusoid(X[S.index(s)], om) for s in ID_SHAPE}
        res = prescribed_motion(cm, (0.0, ID_CHECK_TIME), x0, xd0, pres, p=p, t_eval=ts, rtol=1e-9, atol=1e-11)
        u_lin = np.real(np.multiply.outer(np.exp(1j * om * ts), u))
        diff = float(np.max(np.abs(res.u - u_lin)) / np.max(np.abs(u_lin)))
        track = float(max(np.max(np.abs(res.x[:, cm.coordinates.index(s)] - (ref.x(ts)[:, cm.coordinates.index(s)]
                                                                            + np.real(X[S.index(s)] * np.exp(1j * om * ts)))))
                          for s in ID_SHAPE))
        out.append({"lateral_amplitude": Y, "max_rel_torque_diff": diff, "prescription_error_rad": track,
                    "constraint_drift": float(max(np.max(res.holonomic_drift), np.max(res.velocity_drift)))})
    return {"time": ID_CHECK_TIME, "runs": out,
            "ratio": out[0]["max_rel_torque_diff"] / out[1]["max_rel_torque_diff"]}


CASTER_TILTS = (0.15, 0.25, 0.35, 0.5, 0.7)
"""Caster tilts of both casters [rad] of the stability trend (nominal 0.35)."""
TORUS_RATIOS = (0.1, 0.2, 0.3, 0.4, 0.5)
"""Torus ratios ``mu_R = mu_F`` of the stability trend (nominal 0.3)."""


def _min_abscissa(cm: CompiledModel, **kw: float) -> tuple[float, list]:
    poly, _ = speed_polynomial(cm, cm.param_vector(**kw), wb.PARTITION)
    ev = spectrum(poly, np.linspace(0.05, V_MAX, 200))
    return float(np.min(np.max(ev.real, axis=1))), stable_ranges(poly, v_max=V_MAX)


def caster_torus_trend(cm: CompiledModel, *, quick: bool = False) -> dict[str, Any]:
    """Stability of the steady forward motion against the caster tilt and the torus ratio (Ch. 9).

    For each value: the smallest spectral abscissa over ``0.05 <= v <= V_MAX`` (positive: no
    self-stable speed) and the self-stable ranges.
    """
    tilts = (0.2, 0.35, 0.6) if quick else CASTER_TILTS
    mus = (0.1, 0.3, 0.5) if quick else TORUS_RATIOS
    out: dict[str, Any] = {"caster_tilt_rad": list(tilts), "torus_ratio": list(mus)}
    rows = [_min_abscissa(cm, nu_R=n, nu_F=n) for n in tilts]
    out["vs_caster_tilt"] = {"min_spectral_abscissa": [r[0] for r in rows], "stable_ranges": [r[1] for r in rows]}
    rows = [_min_abscissa(cm, mu_R=m, mu_F=m) for m in mus]
    out["vs_torus_ratio"] = {"min_spectral_abscissa": [r[0] for r in rows], "stable_ranges": [r[1] for r in rows]}
    allv = out["vs_caster_tilt"]["min_spectral_abscissa"] + out["vs_torus_ratio"]["min_spectral_abscissa"]
    out["thesis_statement"] = ("the waveboard is completely unstable along the steady forward motion, whatever the "
                               "forward speed, the casters' inclination angles and the tori aspect ratios")
    out["computed_statement"] = (f"smallest spectral abscissa over speed: {min(allv):.3f} 1/s (positive in every case: "
                                 f"{min(allv) > 0}); no self-stable range in any case: "
                                 f"{not any(r for k in ('vs_caster_tilt', 'vs_torus_ratio') for r in out[k]['stable_ranges'])}")
    out["agrees"] = bool(min(allv) > 0)
    return out


def run(*, out: Path | None = None, quick: bool = False) -> dict:
    """Reduction check, the steady-forward-motion spectrum vs speed and (not with ``quick``, which
    skips compiling the actuated model) the inverse-dynamics study."""
    red = reduction()
    cm = wb.model()
    poly, res = speed_polynomial(cm, cm.param_vector(), wb.PARTITION)
    ev = spectrum(poly, SPEEDS)
    ranges = stable_ranges(poly, v_max=V_MAX)
    fine = spectrum(poly, np.linspace(0.05, V_MAX, 300))
    result: dict[str, Any] = {
        "reduction_max_rel_diff": red["max_rel_diff_vs_benchmark_model"],
        "reduction": red,
        "parameters": dict(wb.PARAMETERS),
        "speeds": [float(v) for v in SPEEDS],
        "eigenvalues": [[[float(z.real), float(z.imag)] for z in e] for e in ev],
        "stable_speed_ranges": ranges,
        "min_spectral_abscissa": float(np.min(np.max(fine.real, axis=1))),
        "completely_unstable": bool(not ranges and np.min(np.max(fine.real, axis=1)) > 0),
        "polynomial_residual": res,
    }
    result["caster_torus_trend"] = caster_torus_trend(cm, quick=quick)
    study = None
    if quick:
        result["inverse_dynamics"] = "skipped in a quick run (it compiles the actuated model)"
    else:
        study = inverse_dynamics_study()
        result["inverse_dynamics"] = {k: v for k, v in study.items() if not k.startswith("_")}
    if out is not None:
        result["figures"] = _plot(poly, ranges, Path(out)) + [_plot_trend(result["caster_torus_trend"], Path(out))]
        if study is not None:
            result["figures"].append(_plot_inverse_dynamics(study, Path(out)))
    return result


def _plot(poly: tuple[np.ndarray, ...], ranges: list, out: Path) -> list[str]:
    from nhcontrol.plotting.style import PALETTE, cite, new_figure, savefig

    vs = np.linspace(0.05, V_MAX, 300)
    ev = spectrum(poly, vs)
    fig, ax = new_figure(title="Waveboard with toroidal wheels: eigenvalues vs speed")
    ax.plot(vs, ev.real, "k.", ms=1.5)
    ax.plot(vs, np.abs(ev.imag), ".", color=PALETTE[0], ms=1.0)
    ax.plot([], [], "k.", label="Re λ")
    ax.plot([], [], ".", color=PALETTE[0], label="|Im λ|")
    for i, (a, b) in enumerate(ranges):
        ax.axvspan(a, b, color=PALETTE[2], alpha=0.3, label="self-stable" if i == 0 else None)
    ax.axhline(0.0, color="0.6", lw=0.6)
    ax.set_ylim(-20, 20)
    ax.set_xlabel("forward speed v (m/s)")
    ax.set_ylabel("eigenvalue λ (1/s)")
    ax.legend()
    cite(fig, "thesis", "Sect. 5.5 (model derived here, parameters chosen)",
         extra="Steady forward motion; eigenvalues of the minimal Jacobian (third procedure). "
               + ("Shaded: self-stable speeds." if ranges else
                  "No speed is self-stable: an eigenvalue has a positive real part at every "
                  "speed, the 'completely unstable' waveboard of Ch. 9."))
    return [savefig(fig, out, "waveboard_eigenvalues").name]


def _plot_trend(tr: dict[str, Any], out: Path) -> str:
    from nhcontrol.plotting.style import cite, new_figure, savefig

    fig, axes = new_figure(1, 2, figsize=(10.0, 3.8), sharey=True,
                           title="Waveboard: smallest spectral abscissa over speed (0.05-8 m/s)")
    axes[0].plot(np.degrees(tr["caster_tilt_rad"]), tr["vs_caster_tilt"]["min_spectral_abscissa"], "o-",
                 color="#0072B2")
    axes[0].set_xlabel("caster tilt of both casters (deg)")
    axes[1].plot(tr["torus_ratio"], tr["vs_torus_ratio"]["min_spectral_abscissa"], "s-", color="#D55E00")
    axes[1].set_xlabel(r"torus ratio $\mu_R = \mu_F$ (-)")
    axes[0].set_ylabel(r"$\min_v \max \mathrm{Re}\,\lambda$ (1/s)")
    for ax in axes:
        ax.axhline(0.0, color="0.4", lw=0.8)
    cite(fig, "thesis", "Ch. 9 (trend computed here)",
         extra="Above zero: unstable at every speed. Thesis: completely unstable. Computed: " + tr["computed_statement"])
    return savefig(fig, out, "waveboard_caster_torus_trend").name


def _plot_inverse_dynamics(study: dict[str, Any], out: Path) -> str:
    from nhcontrol.plotting.style import PALETTE, cite, new_figure, savefig

    tt, curves = study["_curves"]
    labels = {"k_T": lambda v: f"k_T = {v:g} N m/rad", "nu": lambda v: f"ν = {np.degrees(v):.0f}°"}
    fig, axes = new_figure(2, 2, sharex=True, title=(
        f"Waveboard: rider torques along a meander (v = {study['speed']} m/s, λ = {study['wavelength']:g} m, "
        f"lateral amplitude {100 * study['lateral_amplitude']:g} cm)"))
    for col, name in enumerate(ID_VARIANTS):
        for (pname, val), tau in curves.items():
            if pname != name:
                continue
            for row, inp in enumerate(wb.INPUTS):
                axes[row, col].plot(tt, tau[:, row], label=labels[name](val))
        for row, inp in enumerate(wb.INPUTS):
            axes[row, col].set_ylabel(f"{'τ_B (roll, rear platform)' if row == 0 else 'τ_P (twist)'} (N m)")
            axes[row, col].legend()
        axes[1, col].set_xlabel("time over one period t (s)")
        axes[0, col].set_title("torsion-bar stiffness (τ_B: the three curves coincide)" if name == "k_T"
                               else "caster tilt (both casters)")
    cite(fig, "thesis", "Sect. 5.5.4 (inverse dynamics derived here: periodic linear inverse)",
         extra="Torques that roll the rear platform and twist the front one (in phase, equal amplitudes) "
               "so that the board meanders with the same path for every design variant.")
    return savefig(fig, out, "waveboard_inverse_dynamics").name


def summary(result: dict) -> str:
    """Human-readable report of [`run()`][nhcontrol.reproduce.waveboard.run]."""
    red = result["reduction"]
    return "\n".join([
        "Waveboard with toroidal wheels (Sect. 5.5, derived here)",
        f"  reduction (rigid bar, locked rear caster, hoops) vs benchmark model: max rel. diff "
        f"{result['reduction_max_rel_diff']:.2e}; v_w = {red['v_w']}, v_c = {red['v_c']} m/s "
        "(None: stable to 30 m/s)",
        f"  stable speed ranges in (0, {V_MAX}] m/s: {result['stable_speed_ranges'] or 'none'}",
        f"  completely unstable: {result['completely_unstable']} "
        f"(min over speed of max Re λ = {result['min_spectral_abscissa']:.3f} 1/s)",
        f"  caster tilt / torus ratio (Ch. 9): thesis: {result['caster_torus_trend']['thesis_statement']}; computed: "
        f"{result['caster_torus_trend']['computed_statement']} (agrees {result['caster_torus_trend']['agrees']})",
    ] + _inverse_dynamics_lines(result.get("inverse_dynamics")))


def _inverse_dynamics_lines(study: Any) -> list[str]:
    if not isinstance(study, dict):
        return [f"  inverse dynamics: {study}"] if study else []
    lines = [f"  inverse dynamics (Sect. 5.5.4): meander λ = {study['wavelength']:g} m, lateral amplitude "
             f"{study['lateral_amplitude']} m at {study['speed']} m/s; torque amplitudes [N m]:"]
    for r in study["variants"]:
        lines.append(f"    {r['parameter']} = {r['value']:g}: tau_B {r['tau_B_peak']:.2f}, tau_P {r['tau_P_peak']:.2f} "
                     f"(roll {r['phi_b_amplitude_deg']:.2f} deg, twist {r['alpha_amplitude_deg']:.2f} deg)")
    chk = study.get("nonlinear_check")
    if chk:
        lines.append("    nonlinear check (prescribed_motion): max rel. torque diff "
                     + ", ".join(f"{c['max_rel_torque_diff']:.2e} at {c['lateral_amplitude']} m" for c in chk["runs"]))
    return lines
