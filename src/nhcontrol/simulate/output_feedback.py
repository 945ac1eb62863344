"""Output feedback on the nonlinear model: sensors, seeded noise, an estimator and a controller.

[`output_feedback_loop()`][nhcontrol.simulate.output_feedback_loop] closes a sampled loop
around [`forward_dynamics()`][nhcontrol.simulate.forward_dynamics]. At every sample
``t_k = t0 + k h``:

1. the sensors read ``y_k = h(x(t_k), ẋ(t_k), u_{k−1}) + v_k`` (the declared outputs of the
   model, `MultibodySystem.add_output`; ``u_{k−1}`` the input applied over the last sample),
   ``v_k ~ N(0, R_v)``;
2. the estimator takes ``(t_k, y_k, ū_{k−1})`` (``ū``: the *commanded* input; it does not know the
   disturbance) and returns its estimate ``X̂_k`` (attribute ``P``: its covariance);
3. the controller returns the command ``ū_k = controller(k, t_k, X̂_k)``;
4. the plant receives ``u_k = ū_k + w_k``, ``w_k ~ N(0, Q_w)`` (process noise: an input
   disturbance held over the sample), until ``t_{k+1}``.

Both noises come from one ``numpy.random.Generator`` seeded with ``seed``: a run is reproducible.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._util.checks import covariance
from .._util.errors import SimulationInputError, SolverError
from .._util.validation import as_float_array, readonly
from .forward import forward_dynamics
from .result import SimulationResult

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel

__all__ = ["output_feedback_loop", "OutputFeedbackResult"]

Array = NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class OutputFeedbackResult:
    """A closed output-feedback loop: truth, measurements, estimates and covariances.

    Attributes
    ----------
    time : (K,) ndarray
        Sample instants ``t_k``.
    outputs : (K, q) ndarray
        Measurements ``y_k`` (noisy).
    true_outputs : (K, q) ndarray
        ``h`` of the true state (noise free).
    estimates : (K, ns) ndarray
        ``X̂_k`` returned by the estimator.
    covariances : (K, ns, ns) ndarray
        The estimator's ``P`` after the update at ``t_k``.
    x, xd : (K, n) ndarray
        True coordinates and velocities at ``t_k``.
    commands, inputs : (K, k) ndarray
        ``ū_k`` and the applied ``u_k = ū_k + w_k``.
    output_labels, state_labels, input_labels : tuple of str
        Names of the outputs, of the estimated states, of the inputs.
    simulation : SimulationResult
        The continuous trajectory.
    seed : int or None
    """

    time: Array
    outputs: Array
    true_outputs: Array
    estimates: Array
    covariances: Array
    x: Array
    xd: Array
    commands: Array
    inputs: Array
    output_labels: tuple[str, ...]
    state_labels: tuple[str, ...]
    input_labels: tuple[str, ...]
    simulation: SimulationResult
    seed: int | None

    @property
    def t(self) -> Array:
        """Alias of `time`."""
        return self.time

    def std(self) -> Array:
        """``sqrt(diag P_k)`` (K, ns): the 1σ bands of the estimates."""
        return np.sqrt(np.clip(np.einsum("kii->ki", self.covariances), 0.0, None))

    def nees(self, truth: ArrayLike, states: Sequence[str] | None = None) -> Array:
        """Normalized estimation error squared ``eᵀ P⁻¹ e`` (K,) with ``e = truth − X̂``
        (``truth`` (K, ns) in the estimator's state), over the named ``states`` (all by default)."""
        T = as_float_array(truth, "truth", shape=self.estimates.shape)
        idx = (list(range(T.shape[1])) if states is None
               else [list(self.state_labels).index(s) for s in states])
        e = (T - self.estimates)[:, idx]
        P = self.covariances[:, idx][:, :, idx]
        return np.einsum("ki,ki->k", e, np.linalg.solve(P, e[..., None])[..., 0])


def _cov_or_std(val: ArrayLike | None, r: int, name: str) -> Array:
    if val is None:
        return np.zeros((r, r))
    return covariance(val, r, name, what="output_feedback_loop", error=SimulationInputError)


def output_feedback_loop(cm: CompiledModel, t_span: Sequence[float], x0: ArrayLike, xd0: ArrayLike, *,
                         estimator: Any, controller: Callable[[int, float, Array], ArrayLike],
                         sample_time: float, measurement_noise: ArrayLike | None = None,
                         process_noise: ArrayLike | None = None, seed: int | None = None,
                         u_init: ArrayLike | None = None,
                         p: ArrayLike | Mapping[str, float] | None = None,
                         rtol: float = 1e-8, atol: float = 1e-10,
                         pre_sample: Callable[[float, Array, Array], Any] | None = None,
                         **kwargs: Any) -> OutputFeedbackResult:
    """Closed loop with sensors, seeded noise, an estimator and a controller (module docstring).

    Parameters
    ----------
    cm : CompiledModel
        With declared outputs (the sensors).
    t_span : (t0, tf)
    x0, xd0 : (n,) array_like
        True initial state.
    estimator : object
        ``estimator.update(t, y, u_prev) -> X̂`` and attribute ``P`` (covariance), ``states``
        (e.g. `nhcontrol.design.ExtendedKalmanFilter`, `nhcontrol.design.KalmanEstimator`).
    controller : callable ``controller(k, t, X̂) -> ū`` (k,)
    sample_time : float
        Sensor and controller period ``h``.
    measurement_noise : (q, q) covariance or (q,) standard deviations, optional
    process_noise : (k, k) covariance or (k,) standard deviations, optional
        Disturbance added to the held input.
    seed : int, optional
        Seed of the noise generator.
    u_init : (k,) array_like, optional
        Input "applied before t0" (read by the sensors at ``t0`` and given to the estimator).
    p : optional
        Parameters of the plant (may differ from the estimator's: model uncertainty).
    pre_sample : callable ``pre_sample(t, x, ẋ)``, optional
        Called at every sample with the true state before the sensors read it (e.g. to log
        the true minimal state for the estimation error).
    rtol, atol, **kwargs
        Passed to `forward_dynamics()`.

    Returns
    -------
    OutputFeedbackResult
    """
    if not getattr(cm, "outputs", ()):
        raise SolverError(f"model {getattr(cm, 'name', '?')!r} declares no outputs: add the "
                          "sensors with MultibodySystem.add_output(name, expr) before compiling")
    q, k = len(cm.outputs), int(cm.ninputs)
    Rv = _cov_or_std(measurement_noise, q, "measurement_noise")
    Qw = _cov_or_std(process_noise, k, "process_noise")
    rng = np.random.default_rng(seed)
    Lv = np.linalg.cholesky(Rv + 1e-300 * np.eye(q)) if np.any(Rv) else np.zeros((q, q))
    Lw = np.linalg.cholesky(Qw + 1e-300 * np.eye(k)) if k and np.any(Qw) else np.zeros((k, k))
    pv = None if p is None else (cm.param_vector(**p) if isinstance(p, Mapping) else np.asarray(p, float))
    state = {"u": np.zeros(k) if u_init is None else as_float_array(u_init, "u_init", shape=(k,),
                                                                      error=SolverError),
             "ucmd": None, "k": 0}
    state["ucmd"] = state["u"].copy()
    log: dict[str, list] = {key: [] for key in ("t", "y", "y0", "X", "P", "x", "xd", "ucmd", "u")}

    def sampled(t: float, x: Array, xd: Array) -> Array:
        kk = state["k"]
        if pre_sample is not None:
            pre_sample(t, x, xd)
        ytrue = np.asarray(cm.output(x, xd, state["u"] if k else None, pv), dtype=float)
        y = ytrue + Lv @ rng.standard_normal(q)
        X = np.asarray(estimator.update(t, y, state["ucmd"] if k else None), dtype=float)
        if not np.all(np.isfinite(X)):
            raise SolverError(f"output_feedback_loop: the estimator returned a non-finite estimate "
                              f"at t = {t:.9g} (sample {kk}): {X.tolist()}")
        try:
            raw = np.asarray(controller(kk, t, X), dtype=float)
        except (TypeError, ValueError) as exc:
            raise SimulationInputError(f"output_feedback_loop: controller(k, t, X) at t = {t:.9g} must "
                                       f"return {k} real inputs ({exc})") from exc
        if raw.size != k or not np.all(np.isfinite(raw)):
            raise SimulationInputError(
                f"output_feedback_loop: controller(k, t, X) at t = {t:.9g} (sample {kk}) must return "
                f"{k} finite inputs {list(cm.inputs)}, got shape {raw.shape} {raw.ravel()[:8].tolist()}")
        ucmd = raw.reshape(k)
        u = ucmd + (Lw @ rng.standard_normal(k) if k else 0.0)
        for key, val in (("t", t), ("y", y), ("y0", ytrue), ("X", X.copy()),
                         ("P", np.array(estimator.P, dtype=float)), ("x", x.copy()),
                         ("xd", xd.copy()), ("ucmd", ucmd), ("u", u)):
            log[key].append(val)
        state.update(u=u, ucmd=ucmd, k=kk + 1)
        return u

    sim = forward_dynamics(cm, t_span, x0, xd0, controller=sampled, sample_time=sample_time,
                           p=pv, rtol=rtol, atol=atol, **kwargs)
    arr = {key: readonly(np.array(val, dtype=float)) for key, val in log.items()}
    return OutputFeedbackResult(time=arr["t"], outputs=arr["y"], true_outputs=arr["y0"],
                                estimates=arr["X"], covariances=arr["P"], x=arr["x"],
                                xd=arr["xd"], commands=arr["ucmd"], inputs=arr["u"],
                                output_labels=tuple(cm.outputs),
                                state_labels=tuple(getattr(estimator, "states", ()) or ()),
                                input_labels=tuple(cm.inputs), simulation=sim, seed=seed)
