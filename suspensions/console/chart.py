"""The dashboard's 24-hour activity chart: geometry computed here, drawn as inline SVG by the template."""

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

HOURS = 24
WIDTH, HEIGHT = 720, 200
LEFT, RIGHT, TOP, BOTTOM = 36, 12, 12, 26

# Event kind -> series. A resume of any path writes exactly one "admitted"
# event (a one-shot resume writes "started" too), so counting admissions
# counts each resume once.
SERIES = (
    ("suspended", "Pauses", "pauses"),
    ("admitted", "Resumes", "resumes"),
    ("expired", "Expiries", "expiries"),
)


def window_start(now: datetime) -> datetime:
    """The first hour bucket of the chart: 23 whole hours before the current one."""
    return now.replace(minute=0, second=0, microsecond=0) - timedelta(hours=HOURS - 1)


def nice_ceiling(value: int) -> int:
    for step in (4, 8, 12, 20, 40, 60, 100, 200, 400, 1000, 2000, 4000, 10000):
        if value <= step:
            return step
    return ((value // 10000) + 1) * 10000


def build(counts: Iterable[tuple[datetime, str, int]], now: datetime) -> dict[str, Any]:
    """Series of 24 hourly points from (hour, kind, n) rows, with SVG coordinates."""
    start = window_start(now)
    per_kind: dict[str, list[int]] = {kind: [0] * HOURS for kind, _, _ in SERIES}
    for hour, kind, n in counts:
        index = int((hour - start).total_seconds() // 3600)
        if kind in per_kind and 0 <= index < HOURS:
            per_kind[kind][index] += n
    top = nice_ceiling(max([1, *(max(v) for v in per_kind.values())]))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_w / HOURS
    bar = round(slot * 0.78 / len(SERIES), 1)

    def y(v: int) -> float:
        return round(TOP + plot_h * (1 - v / top), 1)

    series = []
    for n, (kind, label, css) in enumerate(SERIES):
        values = per_kind[kind]
        bars = [
            {
                "x": round(LEFT + slot * i + slot * 0.11 + bar * n, 1),
                "y": y(v),
                "h": round(y(0) - y(v), 1),
                "value": v,
                "hour": (start + timedelta(hours=i)).strftime("%H:00"),
            }
            for i, v in enumerate(values)
            if v
        ]
        series.append({"kind": kind, "label": label, "css": css, "total": sum(values), "bars": bars})
    grid = [{"y": y(v), "label": v} for v in (0, top // 2, top)]
    ticks = [
        {"x": round(LEFT + slot * (i + 0.5), 1), "label": (start + timedelta(hours=i)).strftime("%H:00")}
        for i in range(0, HOURS, 3)
    ]
    return {
        "width": WIDTH,
        "height": HEIGHT,
        "left": LEFT,
        "right": WIDTH - RIGHT,
        "bar_width": bar,
        "label_y": HEIGHT - 6,
        "series": series,
        "grid": grid,
        "ticks": ticks,
    }
