"""The alert plot (alerts/plot.py): a small valid PNG with the threshold line and the event marked."""

from __future__ import annotations

import io
import math
import random

import numpy as np
import pytest
from PIL import Image

from alerts.plot import EVENT_COLOR, HEIGHT_PX, THRESHOLD_COLOR, WIDTH_PX, render_png
from alerts.views import Plot


def render_metric_png(metric: str, series: dict, title: str | None = None, **size) -> bytes:
    plot = Plot(
        kind="metric",
        title=title or metric,
        caption=metric,
        x=series.get("x", []),
        y=series.get("y", []),
        y_min=series.get("y_min") or (),
        axis=series.get("axis") or "step",
        y_label=metric,
        event_x=series.get("event_x"),
        threshold=series.get("threshold"),
    )
    return render_png(plot, **size)


def _loss_series(n: int = 300, threshold: float | None = 4.0, event_x: float | None = 1201) -> dict:
    xs = list(range(1000, 1000 + n))
    ys = [2.0 + 0.1 * math.sin(i / 5) + (3.0 if i > 1200 else 0.0) for i in xs]
    return {"x": xs, "y": ys, "axis": "step", "event_x": event_x, "threshold": threshold}


def _image(png: bytes) -> Image.Image:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    Image.open(io.BytesIO(png)).verify()  # checks the chunks and CRCs
    return Image.open(io.BytesIO(png)).convert("RGB")


def _pixels_near(img: Image.Image, hex_color: str, tol: int = 40) -> int:
    want = np.array([int(hex_color[i : i + 2], 16) for i in (1, 3, 5)], dtype=np.int16)
    pixels = np.asarray(img, dtype=np.int16)
    return int((np.abs(pixels - want) <= tol).all(axis=2).sum())


def test_a_valid_small_png_of_the_default_size():
    png = render_metric_png("train/loss", _loss_series(), title="train/loss · run llama-70b")
    img = _image(png)
    assert img.size == (WIDTH_PX, HEIGHT_PX) == (720, 320)
    assert len(png) < 100_000


def test_custom_size_and_many_noisy_points_stay_under_100_kb():
    rng = random.Random(7)
    xs = list(range(5000))
    ys = [rng.gauss(0, 1) for _ in xs]
    series = {"x": xs, "y": ys, "y_min": [y - 1 for y in ys], "threshold": 2.5, "event_x": 2500}
    png = render_metric_png("noise", series, width_px=600, height_px=300)
    assert _image(png).size == (600, 300)
    assert len(png) < 100_000


def test_the_threshold_line_is_drawn_only_when_there_is_a_threshold():
    with_line = _image(render_metric_png("loss", _loss_series(threshold=4.0, event_x=None)))
    without = _image(render_metric_png("loss", _loss_series(threshold=None, event_x=None)))
    assert _pixels_near(with_line, THRESHOLD_COLOR) > 200
    assert _pixels_near(without, THRESHOLD_COLOR) == 0


def test_the_event_is_marked():
    marked = _image(render_metric_png("loss", _loss_series(threshold=None, event_x=1201)))
    unmarked = _image(render_metric_png("loss", _loss_series(threshold=None, event_x=None)))
    assert _pixels_near(marked, EVENT_COLOR) > 50
    assert _pixels_near(unmarked, EVENT_COLOR) == 0


def test_a_threshold_far_from_the_data_is_still_in_view():
    series = {"x": [1, 2, 3, 4], "y": [1.0, 1.1, 1.2, 1.1], "threshold": 50.0, "event_x": 3}
    assert _pixels_near(_image(render_metric_png("loss", series)), THRESHOLD_COLOR) > 200


def test_time_axis_and_gaps():
    t0 = 1_780_000_000
    ys: list[float | None] = [50.0 + (i % 7) for i in range(200)]
    ys[20:30] = [None] * 10
    ys[40] = float("nan")
    series = {
        "x": [t0 + 60 * i for i in range(200)],
        "y": ys,
        "axis": "time",
        "event_x": t0 + 60 * 150,
        "threshold": 55.0,
    }
    img = _image(render_metric_png("gpu/util", series))
    assert img.size == (720, 320)


@pytest.mark.parametrize("series", [{"x": [], "y": []}, {"x": [1, 2], "y": [None, float("nan")]}, {}])
def test_nothing_to_draw_is_an_error(series):
    with pytest.raises(ValueError, match="no finite values"):
        render_metric_png("loss", series)


def test_a_stall_shows_progress_against_time_with_the_stall_shaded_and_the_limit_as_a_span():
    t0 = 1_780_000_000.0
    times = [t0 + 10 * i for i in range(120)]  # a step every 10 s for 20 minutes, then nothing
    plot = Plot(
        kind="progress",
        title="progress · run hero-1",
        caption="step against time",
        x=times,
        y=list(range(120)),
        axis="time",
        y_label="step",
        shade=(times[-1], times[-1] + 1800.0),  # 30 minutes without a step
        limit=900.0,
    )
    img = _image(render_png(plot))
    shaded = _pixels_near(img, "#fbdcdc", tol=12)  # the stall: red at 15% on white
    assert shaded > 20_000, "the stall interval is shaded, and it is wide (30 of 50 minutes)"
    assert _pixels_near(img, THRESHOLD_COLOR) > 100, "the limit is drawn"
