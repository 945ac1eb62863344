"""Monte-Carlo verification: run a closed loop for sampled parameters and initial deviations.

A controller designed on a nominal linearization is only trusted once it has been run on the
*nonlinear* plant over the uncertainty it must tolerate.
[`monte_carlo()`][nhcontrol.applications.verify.monte_carlo] draws ``n`` samples
(model parameters, initial deviations, anything the run takes), calls the run for each of them
through [`nhcontrol.sweep.sweep()`][nhcontrol.sweep.sweep] (serially, in processes, or on a Dask
cluster: the same
call), and reports the success rate, statistics of every metric and the worst cases with the
samples that produced them.

Examples
--------
>>> from nhcontrol.applications.verify import monte_carlo, uniform, relative
>>> def settle(gain, x0):               # a first-order loop x' = -gain x, sampled at 1 s
...     return {"final": abs(x0) * 2.718281828 ** (-gain * 1.0)}
>>> res = monte_carlo(settle, {"gain": relative(2.0, 0.5), "x0": uniform(-1.0, 1.0)}, n=200,
...                   success={"final": 0.3}, seed=1)
>>> res.n, res.success_rate > 0.9
(200, True)
>>> worst = res.worst("final", k=1)[0]
>>> worst["final"] > 0.3 or res.success_rate == 1.0
True

Sample ``i`` depends only on ``seed`` and ``i`` (child ``i`` of ``SeedSequence(seed)``): the same
samples whatever the back-end, the number of workers, or ``n`` (a run of 100 samples is the
first 100 of a run of 1,000).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Mapping

import numpy as np
from numpy.typing import ArrayLike, NDArray

from nhcontrol._util.errors import NhcontrolError
from nhcontrol.sweep import SweepResult, sweep
from nhcontrol._util.reprs import concise_repr

__all__ = ["MonteCarloError", "MonteCarloResult", "monte_carlo", "draw_samples", "uniform",
           "normal", "relative", "Sampler", "wilson_interval"]

Sampler = Callable[[np.random.Generator], Any]
"""A sampler draws one value from a generator."""


class MonteCarloError(NhcontrolError, ValueError):
    """A Monte-Carlo study is malformed (samplers, success criterion, sample count)."""


# ----------------------------------------------------------------------------------- samplers
def _finite(name: str, value: Any) -> NDArray[np.float64]:
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise MonteCarloError(f"{name} must be numeric, got {value!r}") from exc
    if not np.all(np.isfinite(arr)):
        raise MonteCarloError(f"{name} must be finite, got {value!r}")
    return arr


@dataclass(frozen=True)
class _Draw:
    """One draw of ``rng.<method>(a, b)`` (``uniform(low, high)``, ``normal(mean, std)``)."""

    method: str
    a: Any
    b: Any

    def __call__(self, rng: np.random.Generator) -> Any:
        v = getattr(rng, self.method)(self.a, self.b)
        return float(v) if np.ndim(v) == 0 else v

    def __repr__(self) -> str:
        return f"{self.method}({self.a!r}, {self.b!r})"


def uniform(low: ArrayLike, high: ArrayLike) -> Sampler:
    """Uniform on ``[low, high)`` (scalars, or arrays of equal shape for a vector sample)."""
    lo, hi = _finite("uniform low", low), _finite("uniform high", high)
    if lo.shape != hi.shape or np.any(hi < lo):
        raise MonteCarloError(f"uniform needs low <= high of the same shape, got low={low!r}, "
                              f"high={high!r}")
    return _Draw("uniform", lo.item() if lo.ndim == 0 else lo, hi.item() if hi.ndim == 0 else hi)


def normal(mean: ArrayLike, std: ArrayLike) -> Sampler:
    """Normal with the given mean and standard deviation (``std >= 0``)."""
    mu, sd = _finite("normal mean", mean), _finite("normal std", std)
    if np.any(sd < 0):
        raise MonteCarloError(f"normal std must be >= 0, got {std!r}")
    return _Draw("normal", mu.item() if mu.ndim == 0 else mu, sd.item() if sd.ndim == 0 else sd)


def relative(nominal: float, spread: float,
             distribution: Literal["uniform", "normal"] = "uniform") -> Sampler:
    """``nominal * (1 + e)``: ``e`` uniform on ``[-spread, spread]`` (or normal, std ``spread``).

    ``relative(0.05, 0.10)`` is a radius of 5 cm known to ±10 %.
    """
    nom, sp = float(_finite("relative nominal", nominal)), float(_finite("relative spread", spread))
    if sp < 0:
        raise MonteCarloError(f"relative spread must be >= 0, got {spread!r}")
    if distribution == "uniform":
        return uniform(nom * (1 - sp) if nom >= 0 else nom * (1 + sp),
                       nom * (1 + sp) if nom >= 0 else nom * (1 - sp))
    if distribution == "normal":
        return normal(nom, abs(nom) * sp)
    raise MonteCarloError(f"distribution must be 'uniform' or 'normal', got {distribution!r}")


def draw_samples(samplers: Mapping[str, Any], n: int, seed: Any = 0) -> list[dict[str, Any]]:
    """The ``n`` samples [`monte_carlo()`][nhcontrol.applications.verify.monte_carlo] draws for ``samplers`` and ``seed`` (sample ``i`` from
    child ``i`` of ``SeedSequence(seed)``), e.g. to rerun one case or time the runs elsewhere."""
    if not isinstance(samplers, Mapping) or not samplers:
        raise MonteCarloError("samplers must be a non-empty mapping name -> sampler (or value), "
                              f"got {samplers!r}")
    return _draw(samplers, seed, int(n))


def _draw(samplers: Mapping[str, Any], seed: Any, n: int) -> list[dict[str, Any]]:
    ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    out = []
    for child in ss.spawn(n):
        rng = np.random.default_rng(child)
        out.append({k: (s(rng) if callable(s) else s) for k, s in samplers.items()})
    return out


# ------------------------------------------------------------------------------------ result
def wilson_interval(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson score interval of a success probability from ``k`` successes in ``n`` runs.

    $$
    \\frac{\\hat p + z^2/(2n) \\pm z\\sqrt{\\hat p(1-\\hat p)/n + z^2/(4n^2)}}{1 + z^2/n},
    \\qquad \\hat p = k/n
    $$

    (E. B. Wilson, J. Am. Stat. Assoc. 22 (1927) 209-212). Unlike the normal approximation it
    stays inside ``[0, 1]`` and is not empty at ``k = 0`` or ``k = n`` (``50/50`` gives
    ``[0.929, 1]`` at 95 %). Default ``z``: the two-sided 95 % normal quantile.

    Raises
    ------
    MonteCarloError
        ``n < 1``, ``k`` outside ``[0, n]`` or ``z <= 0``.
    """
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise MonteCarloError(f"n must be a positive integer number of runs, got {n!r}")
    if isinstance(k, bool) or int(k) != k or not 0 <= k <= n:
        raise MonteCarloError(f"k must be an integer number of successes in [0, {n}], got {k!r}")
    if not (math.isfinite(z) and z > 0):
        raise MonteCarloError(f"z must be a positive quantile, got {z!r}")
    p, z2 = k / n, z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    lo = 0.0 if k == 0 else max(0.0, centre - half)
    hi = 1.0 if k == n else min(1.0, centre + half)
    return lo, hi


def _scalar_metrics(value: Any) -> dict[str, float]:
    if isinstance(value, Mapping):
        items = value.items()
    elif np.ndim(value) == 0 and isinstance(value, (int, float, np.number)):
        items = [("value", value)]
    else:
        raise TypeError(f"the run must return a mapping of scalar metrics (or one number), got "
                        f"{type(value).__name__}")
    out: dict[str, float] = {}
    for k, v in items:
        if np.ndim(v) != 0:
            raise TypeError(f"metric {k!r} must be a scalar, got shape {np.shape(v)}")
        out[str(k)] = float(v)
    return out


@dataclass(frozen=True)
class MonteCarloResult:
    """Outcome of [`monte_carlo()`][nhcontrol.applications.verify.monte_carlo].

    Attributes
    ----------
    samples : tuple of dict
        The drawn samples, in order.
    metrics : tuple of (dict or None)
        The run's scalar metrics per sample (``None`` for a run that raised).
    errors : tuple of (str or None)
        ``"ExceptionType: message"`` of a run that raised (counted as a failure).
    success : (n,) ndarray of bool
        Whether each run met the criterion (a raised run or a NaN metric fails).
    criterion : str
        The success criterion, in words.
    sweep : SweepResult
        The underlying sweep (back-end, cluster).
    """

    __repr__ = concise_repr

    samples: tuple[dict[str, Any], ...]
    metrics: tuple[dict[str, float] | None, ...]
    errors: tuple[str | None, ...]
    success: NDArray[np.bool_]
    criterion: str
    sweep: SweepResult = field(repr=False)

    @property
    def n(self) -> int:
        """Number of runs."""
        return len(self.samples)

    @property
    def n_success(self) -> int:
        """Runs that met the criterion."""
        return int(np.count_nonzero(self.success))

    @property
    def n_errors(self) -> int:
        """Runs that raised (the exception is in `errors`)."""
        return sum(e is not None for e in self.errors)

    @property
    def success_rate(self) -> float:
        """Fraction of runs that met the criterion (raised runs count as failures)."""
        return self.n_success / self.n if self.n else float("nan")

    @property
    def success_interval(self) -> tuple[float, float]:
        """95 % Wilson score interval of the success rate
        ([`wilson_interval()`][nhcontrol.applications.verify.wilson_interval])."""
        return wilson_interval(self.n_success, self.n)

    @property
    def metric_names(self) -> list[str]:
        """Names of the metrics, in the order the runs return them."""
        names: dict[str, None] = {}
        for m in self.metrics:
            if m is not None:
                names.update(dict.fromkeys(m))
        return list(names)

    def values(self, metric: str) -> NDArray[np.float64]:
        """The metric over all runs (NaN where a run raised or did not report it)."""
        if metric not in self.metric_names:
            raise MonteCarloError(f"unknown metric {metric!r}; the runs report "
                                  f"{self.metric_names}")
        return np.array([np.nan if m is None else m.get(metric, np.nan) for m in self.metrics])

    def statistics(self) -> dict[str, dict[str, float]]:
        """Per metric over the runs that report it: ``mean, std, min, median, p95, max, count``."""
        out: dict[str, dict[str, float]] = {}
        for name in self.metric_names:
            v = self.values(name)
            v = v[np.isfinite(v)]
            if v.size == 0:
                out[name] = {"count": 0}
                continue
            out[name] = {"mean": float(v.mean()), "std": float(v.std()), "min": float(v.min()),
                         "median": float(np.median(v)), "p95": float(np.percentile(v, 95)),
                         "max": float(v.max()), "count": int(v.size)}
        return out

    def worst(self, metric: str, k: int = 5, *, largest: bool = True) -> list[dict[str, Any]]:
        """The ``k`` runs with the largest (or smallest) ``metric``, with their samples.

        Runs that raised come first (they are worse than any number). Each entry holds
        ``index``, ``success``, the metric values, ``sample`` and ``error``.
        """
        v = self.values(metric)
        key = np.where(np.isfinite(v), v if largest else -v, np.inf)
        order = np.argsort(-key, kind="stable")[:max(int(k), 0)]
        rows = []
        for i in order:
            row: dict[str, Any] = {"index": int(i), "success": bool(self.success[i])}
            row.update(self.metrics[i] or {})
            row["sample"] = self.samples[i]
            row["error"] = self.errors[i]
            rows.append(row)
        return rows

    def to_dataframe(self) -> Any:
        """pandas DataFrame: one row per run (sample columns, metrics, ``success``, ``error``)."""
        import pandas as pd

        rows = []
        for s, m, ok, e in zip(self.samples, self.metrics, self.success, self.errors):
            row = {k: (v if np.ndim(v) == 0 else np.asarray(v).tolist()) for k, v in s.items()}
            row.update(m or {})
            row.update(success=bool(ok), error=e)
            rows.append(row)
        return pd.DataFrame(rows)

    def to_dict(self, worst_metric: str | None = None, k: int = 5) -> dict[str, Any]:
        """JSON-ready summary: counts, rate, statistics, and the worst cases of a metric."""
        def plain(v: Any) -> Any:
            if isinstance(v, Mapping):
                return {str(a): plain(b) for a, b in v.items()}
            if isinstance(v, (list, tuple)):
                return [plain(b) for b in v]
            if isinstance(v, np.ndarray):
                return v.tolist()
            if isinstance(v, (np.floating, np.integer, np.bool_)):
                return v.item()
            return v

        out: dict[str, Any] = {"n": self.n, "n_success": self.n_success,
                               "n_errors": self.n_errors, "success_rate": self.success_rate,
                               "success_rate_wilson95": list(self.success_interval),
                               "criterion": self.criterion, "statistics": self.statistics(),
                               "backend": self.sweep.backend}
        if worst_metric is not None:
            out["worst"] = plain(self.worst(worst_metric, k))
        return out

    def summary(self, worst_metric: str | None = None, k: int = 3) -> str:
        """A few lines for humans."""
        lines = [f"{self.n_success}/{self.n} runs met '{self.criterion}' "
                 f"(success rate {100 * self.success_rate:.1f} %, {self.n_errors} raised)"]
        for name, st in self.statistics().items():
            if st.get("count", 0):
                lines.append(f"  {name}: median {st['median']:.4g}, p95 {st['p95']:.4g}, "
                             f"max {st['max']:.4g}")
        if worst_metric is not None:
            for row in self.worst(worst_metric, k):
                lines.append(f"  worst #{row['index']}: {worst_metric} = "
                             f"{row.get(worst_metric, float('nan')):.4g}"
                             + (f" ({row['error']})" if row["error"] else ""))
        return "\n".join(lines)


# ------------------------------------------------------------------------------- the driver
def _criterion(success: Any) -> tuple[Callable[[dict[str, float]], bool], str]:
    if callable(success):
        return success, getattr(success, "__name__", "success(metrics)")
    if isinstance(success, Mapping) and success:
        limits = {}
        for k, v in success.items():
            lim = float(_finite(f"success limit of {k!r}", v))
            limits[str(k)] = lim

        def check(metrics: dict[str, float]) -> bool:
            missing = [k for k in limits if k not in metrics]
            if missing:
                raise MonteCarloError(f"the success criterion names metric(s) {missing} that the "
                                      f"run does not return (it returns {sorted(metrics)})")
            return all(metrics[k] <= lim for k, lim in limits.items())
        return check, " and ".join(f"{k} <= {v:g}" for k, v in limits.items())
    raise MonteCarloError(f"success must be a callable success(metrics) -> bool or a non-empty "
                          f"mapping metric -> largest allowed value, got {success!r}")


def monte_carlo(run: Callable[..., Any], samplers: Mapping[str, Any], n: int, *,
                success: Callable[[dict[str, float]], bool] | Mapping[str, float],
                seed: Any = 0, constants: Mapping[str, Any] | None = None,
                backend: Literal["serial", "threads", "processes", "dask"] = "serial",
                progress: bool = False, **sweep_options: Any) -> MonteCarloResult:
    """Run ``run(**sample, **constants)`` for ``n`` random samples and judge every outcome.

    Parameters
    ----------
    run : callable
        One closed loop: takes the sampled quantities (and ``constants``) as keyword arguments
        and returns a mapping of scalar metrics (e.g. ``{"final_error_m": ..., "peak_input":
        ...}``) or one number (metric ``"value"``). An exception is recorded as a failed run.
    samplers : mapping name -> sampler or value
        A sampler is any callable ``f(rng) -> value`` ([`uniform()`][nhcontrol.applications.verify.uniform],
        [`normal()`][nhcontrol.applications.verify.normal],
        [`relative()`][nhcontrol.applications.verify.relative], or your own); a plain value is passed unchanged
        to every run.
    n : int
        Number of runs (``>= 1``).
    success : callable or mapping
        ``success(metrics) -> bool``, or ``{metric: largest allowed value}`` (all must hold).
    seed : int or SeedSequence
        Sample ``i`` is drawn from child ``i`` of ``SeedSequence(seed)``.
    constants : mapping, optional
        Keyword arguments shared by every run (shipped once per worker).
    backend, progress, **sweep_options
        Passed to [`nhcontrol.sweep.sweep()`][nhcontrol.sweep.sweep] (``max_workers``,
        ``chunk_size``, ``client``,
        ``address``, ...): the same study runs serially, in processes or on a Dask cluster.

    Returns
    -------
    MonteCarloResult

    Raises
    ------
    MonteCarloError
        ``n`` not a positive integer, empty or malformed ``samplers``, a malformed criterion,
        or a criterion naming a metric the runs do not return.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or int(n) < 1:
        raise MonteCarloError(f"n (the number of runs) must be a positive integer, got {n!r}")
    if not isinstance(samplers, Mapping) or not samplers:
        raise MonteCarloError("samplers must be a non-empty mapping name -> sampler (or value), "
                              f"got {samplers!r}")
    clash = sorted(set(samplers) & set(constants or {}))
    if clash:
        raise MonteCarloError(f"names {clash} are both sampled and constant; keep one")
    if "errors" in sweep_options:
        raise MonteCarloError("monte_carlo always captures failing runs (errors='capture'); "
                              "do not pass errors=")
    check, words = _criterion(success)
    from .._util.work import check_iterations
    check_iterations(int(n), f"monte_carlo(n={int(n)}): {int(n)} runs", error=MonteCarloError,
                     hint="draw fewer samples (the 95 % interval of a success rate narrows like 1/sqrt(n))")
    samples = _draw(samplers, seed, int(n))
    res = sweep(run, samples, backend=backend, progress=progress, constants=constants,
                errors="capture", **sweep_options)
    metrics: list[dict[str, float] | None] = []
    errors: list[str | None] = list(res.errors)
    ok = np.zeros(len(samples), dtype=bool)
    for i, v in enumerate(res.values):
        if errors[i] is not None:
            metrics.append(None)
            continue
        try:
            m = _scalar_metrics(v)
        except TypeError as exc:
            metrics.append(None)
            errors[i] = f"TypeError: {exc}"
            continue
        metrics.append(m)
        bad = [k for k, x in m.items() if not math.isfinite(x)]
        if bad:
            errors[i] = f"non-finite metric(s) {bad}"
            continue
        ok[i] = bool(check(m))
    return MonteCarloResult(tuple(samples), tuple(metrics), tuple(errors), ok, words, res)
