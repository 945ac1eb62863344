"""Shared figure style: formats, 300 dpi PNG, citation line, CLI --format and end-of-run message."""

from __future__ import annotations

import pytest

from nhcontrol.cli import main
from nhcontrol.plotting.style import (DPI, FORMATS, REFERENCES, cite, current_format,
                                      figure_format, new_figure, savefig)


@pytest.mark.parametrize("fmt", FORMATS)
def test_savefig_writes_each_format(tmp_path, fmt):
    fig, ax = new_figure(title="t")
    ax.plot([0, 1], [0, 1])
    path = savefig(fig, tmp_path, "f", fmt=fmt)
    assert path == tmp_path / f"f.{fmt}" and path.stat().st_size > 0


def test_png_is_300_dpi(tmp_path):
    from matplotlib.image import imread

    fig, ax = new_figure(figsize=(2.0, 1.0))
    ax.set_axis_off()
    ax.grid(False)
    path = savefig(fig, tmp_path, "f", fmt="png")
    assert DPI == 300
    h, w = imread(path).shape[:2]
    assert w > 1.5 * 300  # 2 in wide at 300 dpi (tight bbox trims a little)


def test_figure_format_context_and_bad_format(tmp_path):
    assert current_format() == "png"
    with figure_format("svg"):
        fig, _ = new_figure()
        assert savefig(fig, tmp_path, "g").suffix == ".svg"
    assert current_format() == "png"
    with pytest.raises(ValueError, match="choose one of"):
        with figure_format("jpg"):
            pass


def test_cite_names_the_thesis():
    fig, _ = new_figure()
    t = cite(fig, "thesis", "Fig. 4.5")
    assert "García-Agúndez" in t and "Fig. 4.5" in t
    from nhcontrol.plotting.style import figure_text
    assert figure_text(fig)[1] == t and not fig.texts      # in the metadata, not in the image
    assert "Universidad de Sevilla, 2023" in REFERENCES["thesis"]


def test_cli_format_and_end_of_run_message(tmp_path, capsys):
    assert main(["reproduce", "skateboard", "--quick", "--out", str(tmp_path),
                 "--format", "svg"]) == 0
    out = capsys.readouterr().out
    assert (tmp_path / "skateboard_eigenvalues.svg").exists()
    assert f"written to {tmp_path}" in out
    assert "v = 0 m/s" in out  # round-off zero printed as 0
    assert main(["reproduce", "skateboard", "--quick"]) == 0
    assert "add --out DIR" in capsys.readouterr().out


def test_reproduce_help_cites_the_thesis(capsys):
    with pytest.raises(SystemExit):
        main(["reproduce", "--help"])
    out = capsys.readouterr().out
    assert "García-Agúndez" in out and "Meijaard" in out


def test_every_figure_goes_through_the_style_module():
    """Reproduce targets and plotting helpers create figures with ``new_figure`` and save them
    with ``savefig`` of nhcontrol.plotting.style (300 dpi PNG, --format), never directly."""
    import re
    from pathlib import Path

    src = Path(__file__).resolve().parents[1] / "src" / "nhcontrol"
    offenders = []
    for path in [*(src / "reproduce").glob("*.py"), *(src / "plotting").glob("*.py")]:
        if path.name == "style.py":
            continue
        text = path.read_text(encoding="utf-8")
        for pattern in (r"\bplt\.subplots\(", r"\bplt\.figure\(", r"\.savefig\([^)]*dpi"):
            if re.search(pattern, text):
                offenders.append(f"{path.name}: {pattern}")
    assert not offenders, offenders


def test_png_carries_title_and_caption(tmp_path):
    """savefig stores the figure's title and citation caption in the PNG metadata (the docs
    gallery shows them)."""
    from PIL import Image

    fig, ax = new_figure(title="Benchmark bicycle: eigenvalues vs speed")
    ax.plot([0, 1], [0, 1])
    cite(fig, "thesis", "Fig. 4.5", extra="v_w: weave speed.")
    path = savefig(fig, tmp_path, "f")
    with Image.open(path) as im:
        assert im.info["Title"] == "Benchmark bicycle: eigenvalues vs speed"
        assert "Fig. 4.5" in im.info["Description"] and "v_w: weave speed." in im.info["Description"]
        assert "García-Agúndez" in im.info["Description"]
        assert im.info["dpi"][0] == pytest.approx(300, abs=1)


def test_cli_size_draws_journal_widths(tmp_path):
    """--size column: the target's figures are 3.5 in wide (the --quick skateboard)."""
    from PIL import Image

    from nhcontrol.cli import main

    assert main(["reproduce", "skateboard", "--quick", "--out", str(tmp_path), "--size", "column"]) == 0
    pngs = sorted(tmp_path.glob("*.png"))
    assert pngs
    for p in pngs:
        with Image.open(p) as im:
            w_in = im.size[0] / im.info["dpi"][0]
        assert 3.0 <= w_in <= 3.5 + 0.15, (p.name, w_in)  # bbox "tight": 0.02 in margins
