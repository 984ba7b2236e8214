"""The soak's chart (bench/soak.py): throughput and p99 over time as a hand-written SVG, no plotting dependency."""

import math
from pathlib import Path
from typing import Any

import common
from soak_report import bucket_of


def nice_top(value: float) -> float:
    if value <= 0:
        return 1.0
    exp = 10 ** math.floor(math.log10(value))
    return next(m * exp for m in (1, 2, 2.5, 5, 10) if m * exp >= value)


def panel(
    y0: int, title: str, series: list[tuple[float, float]], dots: list[tuple[float, float]], span: float, color: str
) -> list[str]:
    """One plot 660 x 170 at (70, y0): a polyline of 10-second values and a dot per minute."""
    left, width, height = 70, 660, 170
    top = nice_top(max([v for _t, v in series + dots], default=1.0))
    out = [f'<text x="{left}" y="{y0 - 8}" font-size="13" font-weight="bold">{title}</text>']
    for i in range(5):
        value = top * i / 4
        y = y0 + height - height * i / 4
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + width}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" font-size="11" text-anchor="end">{value:g}</text>')
    for m in range(int(span // 60) + 1):
        x = left + width * m * 60 / span
        out.append(f'<line x1="{x:.1f}" y1="{y0 + height}" x2="{x:.1f}" y2="{y0 + height + 4}" stroke="#333"/>')
        out.append(f'<text x="{x:.1f}" y="{y0 + height + 17}" font-size="11" text-anchor="middle">{m}</text>')
    out.append(f'<rect x="{left}" y="{y0}" width="{width}" height="{height}" fill="none" stroke="#333"/>')

    def point(t: float, v: float) -> str:
        return f"{left + width * t / span:.1f},{y0 + height - height * v / top:.1f}"

    out.append(
        f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{" ".join(point(t, v) for t, v in series)}"/>'
    )
    out += [
        f'<circle cx="{point(t, v).split(",")[0]}" cy="{point(t, v).split(",")[1]}" r="3.5" fill="{color}"/>'
        for t, v in dots
    ]
    return out


def write_chart(book: Any, rows: list[dict[str, Any]], minutes: float, path: Path) -> None:
    """Throughput (calls/s) and p99 (ms) over time: per 10 s as a line, per minute (`rows`) as dots.

    The line leaves out the calls of scenarios finishing after the deadline; the dots count them in the last minute.
    """
    span = max(10.0, minutes * 60)
    size, count = 10.0, max(1, math.ceil(span / 10))
    buckets: list[list[float]] = [[] for _ in range(count)]
    for at, _kind, seconds, _status, _ok in book.calls:
        if at <= span:
            buckets[bucket_of(at, size, count)].append(seconds)
    spans = [min(size, span - i * size) for i in range(count)]
    middles = [i * size + spans[i] / 2 for i in range(count)]
    tput = [(t, len(b) / s) for t, b, s in zip(middles, buckets, spans, strict=True)]
    p99 = [(t, common.percentile(b, 99) * 1000) for t, b in zip(middles, buckets, strict=True)]
    at = [(min(r["minute"] * 60, span) + (r["minute"] - 1) * 60) / 2 for r in rows]
    dots_t = [(t, r["calls_per_s"]) for t, r in zip(at, rows, strict=True)]
    dots_p = [(t, r["p99_ms"]) for t, r in zip(at, rows, strict=True)]
    body = panel(40, "Throughput, HTTP calls/s (line: 10 s, dots: minute)", tput, dots_t, span, "#1f77b4")
    body += panel(290, "p99 latency of all calls, ms (line: 10 s, dots: minute)", p99, dots_p, span, "#d62728")
    body.append('<text x="400" y="500" font-size="12" text-anchor="middle">minutes into the soak</text>')
    svg = '<svg xmlns="http://www.w3.org/2000/svg" width="760" height="510" font-family="sans-serif">\n'
    svg += '<rect width="760" height="510" fill="white"/>\n' + "\n".join(body) + "\n</svg>\n"
    path.write_text(svg)
