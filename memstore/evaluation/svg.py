"""The recall@k curves of a run as a small SVG: k = 1..10 across, recall 0..1 up, one
polyline per configuration (``class="series"``, ``data-config`` its name), a legend."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from xml.sax.saxutils import escape, quoteattr

__all__ = ["recall_svg"]

WIDTH, HEIGHT = 560, 340
LEFT, RIGHT, TOP, BOTTOM = 50, 170, 20, 40
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2")


def _x(k: int, ks: int) -> float:
    return LEFT + (k - 1) * (WIDTH - LEFT - RIGHT) / max(ks - 1, 1)


def _y(value: float) -> float:
    return TOP + (1 - value) * (HEIGHT - TOP - BOTTOM)


def recall_svg(summary: Sequence[Mapping[str, Any]]) -> str:
    """The SVG document of ``summary`` (:func:`memstore.evaluation.report.summarise`)."""
    ks = max((len(c["curve"]) for c in summary), default=10)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="11">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
    ]
    bottom, right = HEIGHT - BOTTOM, WIDTH - RIGHT
    parts.append(
        f'<path class="axes" d="M{LEFT},{TOP} V{bottom} H{right}" stroke="black" fill="none"/>'
    )
    for tenth in range(0, 11, 2):
        y = _y(tenth / 10)
        parts.append(
            f'<line x1="{LEFT - 4}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" stroke="#ddd"/>'
        )
        parts.append(
            f'<text x="{LEFT - 8}" y="{y + 4:.1f}" text-anchor="end">{tenth / 10:.1f}</text>'
        )
    for k in range(1, ks + 1):
        x = _x(k, ks)
        parts.append(f'<text x="{x:.1f}" y="{bottom + 16}" text-anchor="middle">{k}</text>')
    parts.append(
        f'<text x="{(LEFT + right) / 2:.1f}" y="{HEIGHT - 6}" text-anchor="middle">k</text>'
    )
    parts.append(
        f'<text x="14" y="{(TOP + bottom) / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {(TOP + bottom) / 2:.1f})">evidence recall@k</text>'
    )
    for i, config in enumerate(summary):
        colour = COLOURS[i % len(COLOURS)]
        points = " ".join(
            f"{_x(k, ks):.1f},{_y(v):.1f}"
            for k, v in enumerate(config["curve"], start=1)
            if v is not None
        )
        parts.append(
            f'<polyline class="series" data-config={quoteattr(str(config["name"]))} '
            f'points="{points}" fill="none" stroke="{colour}" stroke-width="2"/>'
        )
        y = TOP + 10 + 18 * i
        parts.append(
            f'<line x1="{right + 12}" y1="{y}" x2="{right + 32}" y2="{y}" '
            f'stroke="{colour}" stroke-width="2"/>'
        )
        parts.append(f'<text x="{right + 38}" y="{y + 4}">{escape(str(config["name"]))}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
