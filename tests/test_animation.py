"""Animations: nhcontrol.plotting.animate writes GIFs (Pillow) of the three
scenes at low resolution; MP4 needs ffmpeg (a clear error without it); --animate on the
reproduce targets that have a simulation, refused elsewhere."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from nhcontrol.plotting import animate
from nhcontrol.plotting.animation import (AnimationError, ball_plate_scene, bicycle_scene,
                                          ffmpeg_available, iso_3888_1_cones, lane_change_scene)

T = np.linspace(0.0, 2.0, 41)


def _frames(path):
    with Image.open(path) as im:
        return im.n_frames, im.size


def _distinct_frames(path) -> int:
    seen = set()
    with Image.open(path) as im:
        for k in range(im.n_frames):
            im.seek(k)
            seen.add(im.convert("L").tobytes())
    return len(seen)


def test_bicycle_gif(tmp_path):
    scene = bicycle_scene(T, 5 * T, 0.1 * np.sin(T), 0.02 * T, 0.1 * np.sin(4 * T), 0.2 * np.cos(4 * T))
    p = animate(scene, tmp_path / "bike.gif", fps=4, dpi=30, max_frames=5)
    n, (w, h) = _frames(p)
    assert n == 5 and w == round(7.5 * 30) and _distinct_frames(p) == 5   # lean, steer move


def test_ball_plate_gif(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("NHCONTROL_PROGRESS", "1")       # the GIF writer shows a bar
    th = np.pi * T
    scene = ball_plate_scene(T, 0.1 * np.cos(th), 0.1 * np.sin(th), 0.01 * np.sin(th), 0.01 * np.cos(th),
                             reference=(0.1 * np.cos(th), 0.1 * np.sin(th)))
    p = animate(scene, tmp_path / "bp.gif", fps=2, dpi=30, max_frames=10)
    n, _ = _frames(p)
    assert n == 5 and _distinct_frames(p) == 5      # 2 s at 2 fps: samples 0, 0.5, ..., 2 s
    assert "writing bp.gif" in capsys.readouterr().err


def test_lane_change_gif_and_cones(tmp_path):
    from nhcontrol.models.lane_change import ISO_3888_1_SECTIONS, iso_3888_1_path

    cones = iso_3888_1_cones(1.8)
    sec = np.cumsum(ISO_3888_1_SECTIONS)
    # gate 3 (section 3) sits at the offset lane, its two rows 1.2 w + 0.25 apart, its near row
    # 3.5 m left of lane 1's centre line (the default reading of the track's offset)
    g3 = cones[(cones[:, 0] >= sec[1]) & (cones[:, 0] <= sec[2]) & (cones[:, 1] > 1.0)]
    assert np.allclose(sorted(set(np.round(g3[:, 1], 6))), [3.5, 3.5 + 2.41])
    rr = iso_3888_1_cones(1.8, offset_reference="row-to-row")
    g3 = rr[(rr[:, 0] >= sec[1]) & (rr[:, 0] <= sec[2]) & (rr[:, 1] > 1.0)]
    assert np.allclose(sorted(set(np.round(g3[:, 1], 6))), [3.5 - 1.115, 3.5 - 1.115 + 2.41])
    X = 30.0 * T
    path = iso_3888_1_path()
    scene = lane_change_scene(T, X, path(X), np.arctan(path(X, 1)), gamma=0.05 * np.sin(T),
                              reference=(X, path(X)))
    p = animate(scene, tmp_path / "lc.gif", fps=3, dpi=30, max_frames=4)
    assert _frames(p)[0] == 4


def test_errors(tmp_path):
    scene = bicycle_scene(T, T, T, T, T, T)
    with pytest.raises(AnimationError, match=r"must end in \.gif"):
        animate(scene, tmp_path / "x.avi")
    with pytest.raises(AnimationError, match="fps must be a positive number"):
        animate(scene, tmp_path / "x.gif", fps=0)
    with pytest.raises(AnimationError, match="one value per sample"):
        bicycle_scene(T, T[:-1], T, T, T, T)
    if not ffmpeg_available():
        with pytest.raises(AnimationError, match="needs ffmpeg.*write a .gif"):
            animate(scene, tmp_path / "x.mp4")


def test_animation_written_safely(tmp_path):
    """The animation goes through the safe writer: a link planted at the target is replaced,
    never written through; a folder as target is refused naming it; no temporary file stays."""
    scene = bicycle_scene(T, T, T, T, T, T)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    link = tmp_path / "bike.gif"
    link.symlink_to(victim)
    p = animate(scene, link, fps=4, dpi=30, max_frames=3)
    assert victim.read_text() == "keep me"
    assert not p.is_symlink() and _frames(p)[0] == 3
    (tmp_path / "folder.gif").mkdir()
    with pytest.raises(AnimationError, match=r"animate: .*folder\.gif' is a folder"):
        animate(scene, tmp_path / "folder.gif", fps=4, dpi=30, max_frames=3)
    assert sorted(q.name for q in tmp_path.iterdir()) == ["bike.gif", "folder.gif", "victim.txt"]


def test_animate_option_of_the_cli(tmp_path, capsys):
    from nhcontrol.cli import main

    with pytest.raises(SystemExit):
        main(["reproduce", "skateboard", "--animate", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert "--animate does not apply to target 'skateboard'" in err
    assert "ball-plate" in err and "road-vehicles" in err and "bicycle-benchmark" in err


@pytest.mark.slow
def test_bicycle_benchmark_animation(tmp_path):
    """The reproduce target's animation: the simulated bicycle (quick: 2 s, 20 frames)."""
    from nhcontrol.models import benchmark_bicycle as bb
    from nhcontrol.reproduce.bicycle_benchmark import _animation

    p = _animation(bb.model(), tmp_path, quick=True)
    assert p.name == "bicycle_self_stable_5ms.gif" and _frames(p)[0] >= 10


def test_ball_plate_gif_readable_600_px_labels_inside(tmp_path):
    """The reproduce GIF (dpi 80 at the screen width of 7.5 in) is 600 px wide, and the layout
    made once for all frames keeps every title and axis label inside the frame."""
    import matplotlib.pyplot as plt

    from nhcontrol.plotting.animation import _layout_once
    from nhcontrol.plotting.style import animation_figure

    th = np.pi * T
    scene = ball_plate_scene(T, 0.5 * np.cos(th), 0.5 * np.sin(th), 0.01 * np.sin(th), 0.01 * np.cos(th),
                             reference=(0.5 * np.cos(th), 0.5 * np.sin(th)))
    p = animate(scene, tmp_path / "bp.gif", fps=2, dpi=80, max_frames=2)
    from PIL import Image

    with Image.open(p) as im:
        assert im.size[0] >= 600
    fig = animation_figure(scene.title, scene.height)
    scene.setup(fig)(0)
    _layout_once(fig)
    r = fig.canvas.get_renderer()
    frame = fig.bbox
    texts = [fig._suptitle] + [t for ax in fig.axes for t in (ax.title, ax.xaxis.label, ax.yaxis.label)]
    for t in texts:
        if t.get_text():
            bb = t.get_window_extent(r)
            assert bb.x0 >= frame.x0 - 0.5 and bb.y0 >= frame.y0 - 0.5, t.get_text()
            assert bb.x1 <= frame.x1 + 0.5 and bb.y1 <= frame.y1 + 0.5, t.get_text()
    plt.close(fig)
