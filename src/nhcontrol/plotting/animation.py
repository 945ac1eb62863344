"""Animations of simulations: GIF (Pillow) or MP4 (ffmpeg), in the house style.

[`animate()`][nhcontrol.plotting.animate] writes a `Scene` — what to draw at each instant of a
simulation — to a file. Three scenes come with the library:

- [`bicycle_scene()`][nhcontrol.plotting.animation.bicycle_scene]: the bicycle from behind (lean
  ``φ`` and the handlebar's steer ``δ``) and from above (its path, heading and front wheel);
- [`ball_plate_scene()`][nhcontrol.plotting.animation.ball_plate_scene]: the plate's tilt
  ``α, β`` and the contact point's path over the reference circle (drawn on top, dashed);
- [`lane_change_scene()`][nhcontrol.plotting.animation.lane_change_scene]: the car as a
  rectangle (with its front wheel steered) on the ISO 3888-1 track with its cones.

```python
from nhcontrol.plotting import animate
from nhcontrol.plotting.animation import lane_change_scene

scene = lane_change_scene(t, x, y, psi, gamma=gamma, reference=(xr, yr))
animate(scene, "lane_change.gif", fps=20, dpi=80)
```

The drawing is schematic (lines and polygons in metres and degrees), not a rendering of the
multibody model's bodies.
"""

from __future__ import annotations

import math
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._util.errors import ConfigurationError
from .._util.log import get_logger
from .._util.progress import progress
from .._util.staging import write_file_by_name
from .style import PALETTE, REFERENCE_STYLE, animation_figure, rc_params
from .._util.reprs import concise_repr

__all__ = ["AnimationError", "Scene", "animate", "bicycle_scene", "ball_plate_scene",
           "lane_change_scene", "iso_3888_1_cones", "ffmpeg_available"]

_log = get_logger(__name__)


class AnimationError(ConfigurationError):
    """An animation cannot be written (unknown format, no ffmpeg for MP4, bad data)."""


@dataclass(frozen=True)
class Scene:
    """What to draw: ``setup(fig) -> update`` builds the axes and returns ``update(i)``, which
    moves the artists to sample ``i`` of ``t``.

    Attributes
    ----------
    t : (N,) ndarray
        Times of the samples (s); a frame shows one sample.
    setup : callable
        ``setup(fig) -> update`` with ``update(i: int) -> None``.
    title : str
    height : float
        Figure height (in); the width is ``WIDTHS["wide"]``.
    """

    __repr__ = concise_repr

    t: NDArray[np.float64]
    setup: Callable[[Any], Callable[[int], None]]
    title: str
    height: float = 3.6
    meta: dict[str, Any] = field(default_factory=dict)


def ffmpeg_available() -> bool:
    """True when matplotlib can write MP4 (an ``ffmpeg`` executable is on the path)."""
    from matplotlib import animation

    return bool(animation.writers.is_available("ffmpeg")) and shutil.which("ffmpeg") is not None


def animate(scene: Scene, path: str | Path, *, fps: int = 20, dpi: int = 100,
            max_frames: int = 300, speed: float = 1.0) -> Path:
    """Write ``scene`` to ``path``: ``.gif`` with Pillow, ``.mp4`` with ffmpeg.

    Parameters
    ----------
    scene : Scene
        From `bicycle_scene()`, `ball_plate_scene()`, `lane_change_scene()` or your own.
    path : path-like
        File to write; the suffix chooses the format (``.gif`` or ``.mp4``).
    fps : int
        Frames per second of the file.
    dpi : int
        Resolution (the figure is ``WIDTHS["wide"]`` inches wide; ``dpi=40`` for a thumbnail).
    max_frames : int
        At most this many frames: the samples are thinned evenly (the last one is kept).
    speed : float
        Playback speed relative to real time (``2`` plays twice as fast); sets which samples
        become frames together with ``fps``.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    AnimationError
        Unknown suffix, ``.mp4`` without ffmpeg (the message says to write ``.gif``), fewer
        than two samples, non-positive ``fps``/``dpi``/``speed``.
    """
    import matplotlib.pyplot as plt
    from matplotlib import animation

    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".gif", ".mp4"):
        raise AnimationError(f"animation file {str(path)!r} must end in .gif (Pillow) or .mp4 "
                             "(ffmpeg)")
    if suffix == ".mp4" and not ffmpeg_available():
        raise AnimationError(f"writing {path.name!r} needs ffmpeg, which is not installed; write "
                             "a .gif instead (Pillow) or install ffmpeg")
    for nm, v in (("fps", fps), ("dpi", dpi), ("speed", speed), ("max_frames", max_frames)):
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            raise AnimationError(f"{nm} must be a positive number, got {v!r}")
    t = np.asarray(scene.t, dtype=float)
    if t.ndim != 1 or t.size < 2:
        raise AnimationError(f"a scene needs at least two samples, got t of shape {t.shape}")
    # frames at real time / speed, at most max_frames
    n_wall = int(max(2, math.floor((t[-1] - t[0]) / speed * fps) + 1))
    n = int(min(max_frames, n_wall))
    targets = np.linspace(t[0], t[-1], n)
    frames = np.unique(np.clip(np.searchsorted(t, targets), 0, t.size - 1))
    rc = {**rc_params(), "figure.constrained_layout.use": False}   # laid out once, not per frame
    with plt.rc_context(rc):
        fig = animation_figure(scene.title, scene.height)
        update = scene.setup(fig)
        update(int(frames[0]))
        _layout_once(fig)
        writer = (animation.PillowWriter(fps=fps) if suffix == ".gif"
                  else animation.FFMpegWriter(fps=fps, metadata={"title": scene.title}))

        def write(name: str) -> None:
            with writer.saving(fig, name, dpi):      # one draw per frame
                for k in progress(frames, f"writing {path.name}", total=len(frames)):
                    update(int(k))
                    writer.grab_frame()

        try:
            # a fresh temporary file next to ``path``, then one rename: a link planted at
            # ``path`` is replaced, never written through; an interrupted run keeps the old file
            write_file_by_name(path, write, what="animate", error=AnimationError)
        finally:
            plt.close(fig)
    _log.info("animation %s: %d frames at %d fps written to %s", scene.title, len(frames), fps, path)
    return path


def _layout_once(fig: Any) -> None:
    """Lay ``fig`` out once with the constrained layout (it keeps the suptitle, the panel titles
    and the axis labels inside the frame), then freeze it: no layout pass per frame."""
    fig.set_layout_engine("constrained")
    fig.draw_without_rendering()
    fig.set_layout_engine("none")


def _col(a: ArrayLike, name: str, n: int | None = None) -> NDArray[np.float64]:
    v = np.asarray(a, dtype=float).reshape(-1)
    if n is not None and v.size != n:
        raise AnimationError(f"{name} must have one value per sample ({n}), got {v.size}")
    if not np.all(np.isfinite(v)):
        raise AnimationError(f"{name} contains non-finite values")
    return v


def _time_text(ax: Any) -> Any:
    return ax.text(0.02, 0.96, "", transform=ax.transAxes, va="top", ha="left",
                   fontsize=rc_params()["legend.fontsize"])


# ------------------------------------------------------------------------------------ bicycle
def bicycle_scene(t: ArrayLike, x: ArrayLike, y: ArrayLike, psi: ArrayLike, phi: ArrayLike,
                  delta: ArrayLike, *, wheelbase: float = 1.02, wheel_radius: float = 0.3,
                  height: float = 1.1, title: str = "Bicycle: lean and steer") -> Scene:
    """The bicycle seen from behind (lean ``φ``, handlebar turned by ``δ``) and from above
    (rear contact path, heading ``ψ``, front wheel at ``ψ + δ``).

    Parameters
    ----------
    t : (N,) array_like
        Times (s).
    x, y, psi : (N,) array_like
        Rear contact point (m) and yaw (rad).
    phi, delta : (N,) array_like
        Lean and steer angles (rad); the benchmark's ``phi_b`` (lean to the right positive) and
        ``delta``.
    wheelbase, wheel_radius, height : float
        Drawing sizes (m): the benchmark's wheelbase 1.02 m and wheels of 0.3 m.
    """
    tt = _col(t, "t")
    n = tt.size
    X, Y, PS, PH, DE = (_col(v, nm, n) for v, nm in ((x, "x"), (y, "y"), (psi, "psi"),
                                                       (phi, "phi"), (delta, "delta")))

    def setup(fig: Any) -> Callable[[int], None]:
        ax_r, ax_t = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 2]})
        ax_r.set_title("rear view")
        ax_r.set_xlim(-0.9, 0.9)
        ax_r.set_ylim(-0.05, 1.35)
        ax_r.set_aspect("equal")
        ax_r.axhline(0.0, color="0.5", lw=0.8)
        ax_r.plot([0, 0], [0, height], color="0.7", lw=0.8, ls=":")
        ax_r.set_xlabel("lateral (m)")
        ax_r.set_ylabel("height (m)")
        (frame,) = ax_r.plot([], [], color=PALETTE[0], lw=3.0, ls="-", solid_capstyle="round", label="frame")
        (bar,) = ax_r.plot([], [], color=PALETTE[1], lw=2.0, ls="-", label="handlebar")
        ax_r.legend(loc="lower right")
        ax_t.set_title("top view")
        pad = 1.5
        ax_t.set_xlim(X.min() - pad, X.max() + pad)
        ax_t.set_ylim(min(Y.min(), -1.0) - pad, max(Y.max(), 1.0) + pad)
        ax_t.set_aspect("equal", adjustable="box")
        ax_t.set_xlabel(r"$x$ (m)")
        ax_t.set_ylabel(r"$y$ (m)")
        (trace,) = ax_t.plot([], [], color=PALETTE[2], lw=1.3, ls="-", label="rear contact path")
        (body,) = ax_t.plot([], [], color=PALETTE[0], lw=2.0, ls="-")
        (rear,) = ax_t.plot([], [], color="k", lw=3.0, ls="-")
        (front,) = ax_t.plot([], [], color=PALETTE[1], lw=3.0, ls="-", label="front wheel")
        ax_t.legend(loc="upper right")
        txt = _time_text(ax_t)

        def update(i: int) -> None:
            ph, de, ps = PH[i], DE[i], PS[i]
            top = np.array([height * math.sin(ph), height * math.cos(ph)])
            frame.set_data([0.0, top[0]], [0.0, top[1]])
            half = 0.3 * math.cos(de)            # the bar shortens as it turns out of the view
            perp = np.array([math.cos(ph), -math.sin(ph)])
            a, b = top - half * perp, top + half * perp
            bar.set_data([a[0], b[0]], [a[1], b[1]])
            txt.set_text(f"t = {tt[i]:.2f} s   φ = {math.degrees(ph):+.1f}°   δ = {math.degrees(de):+.1f}°")
            trace.set_data(X[:i + 1], Y[:i + 1])
            h = np.array([math.cos(ps), math.sin(ps)])
            pr = np.array([X[i], Y[i]])
            pf = pr + wheelbase * h
            body.set_data([pr[0], pf[0]], [pr[1], pf[1]])
            rear.set_data([pr[0] - wheel_radius * h[0], pr[0] + wheel_radius * h[0]],
                          [pr[1] - wheel_radius * h[1], pr[1] + wheel_radius * h[1]])
            hf = np.array([math.cos(ps + de), math.sin(ps + de)])
            front.set_data([pf[0] - wheel_radius * hf[0], pf[0] + wheel_radius * hf[0]],
                           [pf[1] - wheel_radius * hf[1], pf[1] + wheel_radius * hf[1]])
        return update

    return Scene(tt, setup, title)


# ----------------------------------------------------------------------------------- ball-plate
def ball_plate_scene(t: ArrayLike, x_C: ArrayLike, y_C: ArrayLike, alpha: ArrayLike,
                     beta: ArrayLike, *, reference: tuple[ArrayLike, ArrayLike] | None = None,
                     plate_half: float | None = None, ball_radius: float = 0.02,
                     title: str = "Ball on a tilting plate") -> Scene:
    """The contact point's path on the plate over the reference circle (drawn on top, dashed),
    and the plate's tilt ``α`` (about ``x``) and ``β`` (about ``y``) seen along each axis.

    Parameters
    ----------
    t : (N,) array_like
    x_C, y_C : (N,) array_like
        Contact point on the plate (m).
    alpha, beta : (N,) array_like
        Plate angles (rad), e.g. the held controller inputs resampled on ``t``.
    reference : ((M,), (M,)) array_like, optional
        The reference path (the circle).
    plate_half : float, optional
        Half side of the plate drawn (m); default 1.3 x the largest excursion.
    """
    tt = _col(t, "t")
    n = tt.size
    XC, YC, AL, BE = (_col(v, nm, n) for v, nm in ((x_C, "x_C"), (y_C, "y_C"), (alpha, "alpha"),
                                                    (beta, "beta")))
    ref = None if reference is None else (_col(reference[0], "reference x"),
                                          _col(reference[1], "reference y"))
    ext = max(float(np.max(np.abs(np.r_[XC, YC]))),
              0.0 if ref is None else float(np.max(np.abs(np.r_[ref[0], ref[1]]))))
    half = float(plate_half) if plate_half is not None else 1.3 * max(ext, 0.05)

    def setup(fig: Any) -> Callable[[int], None]:
        ax_p, ax_a, ax_b = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1.4, 1, 1]})
        ax_p.set_title("plate, from above")
        ax_p.set_xlim(-half, half)
        ax_p.set_ylim(-half, half)
        ax_p.set_aspect("equal")
        ax_p.set_xlabel(r"$x_C$ (m)")
        ax_p.set_ylabel(r"$y_C$ (m)")
        (path,) = ax_p.plot([], [], color=PALETTE[0], lw=1.3, ls="-", label="contact path")
        if ref is not None:
            ax_p.plot(ref[0], ref[1], label="reference", **REFERENCE_STYLE)
        from matplotlib.patches import Circle

        ball = Circle((XC[0], YC[0]), ball_radius * half / 0.25, color=PALETTE[1], zorder=6)
        ax_p.add_patch(ball)
        ax_p.legend(loc="upper right")
        txt = _time_text(ax_p)
        tilt_lines = []
        for ax, nm in ((ax_a, r"$\alpha$ (about $x$)"), (ax_b, r"$\beta$ (about $y$)")):
            ax.set_title("tilt " + nm)
            ax.set_xlim(-1.2, 1.2)
            ax.set_ylim(-0.6, 0.6)
            ax.set_aspect("equal")
            ax.axhline(0.0, color="0.7", lw=0.8, ls=":")
            ax.set_xticks([])
            ax.set_yticks([])
            (ln,) = ax.plot([], [], color=PALETTE[0], lw=3.0, ls="-")
            tilt_lines.append(ln)
        ang_txt = [_time_text(ax_a), _time_text(ax_b)]

        def update(i: int) -> None:
            path.set_data(XC[:i + 1], YC[:i + 1])
            ball.center = (XC[i], YC[i])
            txt.set_text(f"t = {tt[i]:.2f} s")
            for ln, ang, at in zip(tilt_lines, (AL[i], BE[i]), ang_txt):
                s = 10.0              # the tilt is drawn exaggerated (x10) to be visible
                c, sn = math.cos(s * ang), math.sin(s * ang)
                ln.set_data([-c, c], [-sn, sn])
                at.set_text(f"{math.degrees(ang):+.2f}° (drawn x10)")
        return update

    return Scene(tt, setup, title, height=3.2)


# ---------------------------------------------------------------------------------- lane change
def iso_3888_1_cones(vehicle_width: float = 1.8, *, sections: Sequence[float] | None = None,
                     offset: float | None = None, x_start: float = 0.0,
                     offset_reference: str = "centre-to-near-row") -> NDArray[np.float64]:
    """Cone positions ``(K, 2)`` (m) of the ISO 3888-1 double lane change: the gates of sections
    1, 3 and 5 (lane widths ``1.1 w + 0.25``, ``1.2 w + 0.25``, ``1.3 w + 0.25`` for a vehicle of
    width ``w``), cones every ~5 m along each gate's two edges.

    By default the cones of [`iso_3888_1_track`][nhcontrol.models.lane_change.iso_3888_1_track]
    (``offset_reference`` says how the 3.5 m offset is read); with ``sections`` or ``offset`` a
    track of other section lengths or with lane 3 centred ``offset`` to the left of lane 1 and
    lane 5 centred on lane 1."""
    from ..models.lane_change import ISO_3888_1_SECTIONS, iso_3888_1_track

    if sections is None and offset is None:
        tr = iso_3888_1_track(offset_reference, vehicle_width=float(vehicle_width),  # type: ignore[arg-type]
                              x_start=float(x_start))
        return np.column_stack(tr.cones())
    sec = np.asarray(ISO_3888_1_SECTIONS if sections is None else sections, dtype=float)
    off = iso_3888_1_track(offset_reference, vehicle_width=float(vehicle_width)).centre_offset \
        if offset is None else float(offset)  # type: ignore[arg-type]
    starts = np.concatenate([[0.0], np.cumsum(sec)]) + x_start
    w = float(vehicle_width)
    gates = ((0, 0.0, 1.1 * w + 0.25), (2, off, 1.2 * w + 0.25), (4, 0.0, 1.3 * w + 0.25))
    cones = []
    for k, yc, lane in gates:
        xs = np.linspace(starts[k], starts[k + 1], max(2, int(round(sec[k] / 5.0)) + 1))
        for side in (-0.5, 0.5):
            cones += [(xx, yc + side * lane) for xx in xs]
    return np.asarray(cones)


def lane_change_scene(t: ArrayLike, x: ArrayLike, y: ArrayLike, psi: ArrayLike, *,
                      gamma: ArrayLike | None = None, reference: tuple[ArrayLike, ArrayLike] | None = None,
                      cones: ArrayLike | None = None, length: float = 4.5, width: float = 1.8,
                      a: float = 1.2, b: float = 1.6, follow: float = 25.0,
                      title: str = "Double lane change (ISO 3888-1)") -> Scene:
    """The car as a rectangle (front wheel steered by ``γ``) on the track with its cones.

    Parameters
    ----------
    t : (N,) array_like
    x, y, psi : (N,) array_like
        Position of the centre of mass ``G`` (m) and yaw (rad).
    gamma : (N,) array_like, optional
        Steering angle of the front wheel (rad).
    reference : ((M,), (M,)) array_like, optional
        The reference path of ``G`` (drawn on top, dashed).
    cones : (K, 2) array_like, optional
        Cone positions; default [`iso_3888_1_cones()`][nhcontrol.plotting.animation.iso_3888_1_cones]
        for a car of ``width``.
    length, width : float
        Car outline (m).
    a, b : float
        Distances of ``G`` to the front and rear axle (m).
    follow : float
        Width of the window that follows the car (m); ``0`` shows the whole track.
    """
    tt = _col(t, "t")
    n = tt.size
    X, Y, PS = (_col(v, nm, n) for v, nm in ((x, "x"), (y, "y"), (psi, "psi")))
    GA = np.zeros(n) if gamma is None else _col(gamma, "gamma", n)
    C = iso_3888_1_cones(width) if cones is None else np.asarray(cones, dtype=float).reshape(-1, 2)
    ref = None if reference is None else (_col(reference[0], "reference x"),
                                          _col(reference[1], "reference y"))

    def setup(fig: Any) -> Callable[[int], None]:
        from matplotlib.patches import Polygon

        ax = fig.subplots(1, 1)
        ax.set_xlabel(r"$x$ (m)")
        ax.set_ylabel(r"$y$ (m)")
        ax.set_aspect("equal", adjustable="box")
        ymin = min(float(C[:, 1].min()) if C.size else Y.min(), Y.min()) - 1.5
        ymax = max(float(C[:, 1].max()) if C.size else Y.max(), Y.max()) + 1.5
        ax.set_ylim(ymin, ymax)
        if C.size:
            ax.plot(C[:, 0], C[:, 1], "^", color=PALETTE[1], ms=5, ls="none", label="cones")
        if ref is not None:
            ax.plot(ref[0], ref[1], label="reference", **REFERENCE_STYLE)
        (trace,) = ax.plot([], [], color=PALETTE[0], lw=1.3, ls="-", label="path of G")
        car = Polygon(np.zeros((4, 2)), closed=True, fc=PALETTE[2], ec=PALETTE[0], lw=1.3, zorder=7)
        ax.add_patch(car)
        (wheel,) = ax.plot([], [], color="k", lw=3.0, ls="-", zorder=8)
        ax.legend(loc="upper left", ncol=3)
        txt = ax.text(0.99, 0.04, "", transform=ax.transAxes, ha="right", va="bottom",
                      fontsize=rc_params()["legend.fontsize"])
        lo, hi = (float(min(X.min(), C[:, 0].min() if C.size else X.min())) - 2,
                  float(max(X.max(), C[:, 0].max() if C.size else X.max())) + 2)

        def update(i: int) -> None:
            c, s = math.cos(PS[i]), math.sin(PS[i])
            R = np.array([[c, -s], [s, c]])
            back = (length - (a + b)) / 2
            box = np.array([[-b - back, -width / 2], [a + back, -width / 2],
                            [a + back, width / 2], [-b - back, width / 2]])
            car.set_xy(box @ R.T + [X[i], Y[i]])
            pf = np.array([X[i], Y[i]]) + a * np.array([c, s])
            hw = np.array([math.cos(PS[i] + GA[i]), math.sin(PS[i] + GA[i])]) * 0.35
            wheel.set_data([pf[0] - hw[0], pf[0] + hw[0]], [pf[1] - hw[1], pf[1] + hw[1]])
            trace.set_data(X[:i + 1], Y[:i + 1])
            if follow > 0:
                x0 = min(max(X[i] - 0.35 * follow, lo), max(lo, hi - follow))
                ax.set_xlim(x0, x0 + follow)
            else:
                ax.set_xlim(lo, hi)
            txt.set_text(f"t = {tt[i]:.2f} s   γ = {math.degrees(GA[i]):+.1f}°")
        return update

    return Scene(tt, setup, title, height=3.0)
