"""The memory view as one self-contained offline HTML file: the page template, its script and style (package data
beside this module), the view data as JSON, the spectrum as an inline SVG, and the vis-network graph library
inlined from the ``pyvis`` package, which ships vis-network's minified build as package data (vis-network is
dual-licensed Apache-2.0 / MIT; its licence header stays in the inlined file). Nothing is fetched when the page
opens.
"""

from __future__ import annotations

import html
import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

from gemrag.errors import GemragError
from gemrag.view.data import ViewData

__all__ = ["PALETTE", "VIS_NETWORK", "render_html", "spectrum_svg", "vis_network_assets", "write_html"]

PALETTE = (
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#86bcb6",
)  # fmt: skip
"""Eigentheme colours (theme j gets ``PALETTE[j % 10]``); nodes without a theme are grey."""

VIS_NETWORK = "templates/lib/vis-9.1.2"
"""Where pyvis 0.3.2 keeps vis-network 9.1.2 (``vis-network.min.js``, ``vis-network.css``) inside its package."""


def vis_network_assets() -> tuple[str, str]:
    """vis-network's minified JavaScript and its CSS, read from the installed ``pyvis`` package.

    Returns:
        ``(javascript, css)`` as text.

    Raises:
        GemragError: pyvis (the ``view`` extra) is not installed, or it no longer ships vis-network there.
    """
    try:
        base = resources.files("pyvis").joinpath(VIS_NETWORK)
    except ModuleNotFoundError as exc:
        raise GemragError("`gemrag view` needs pyvis, which ships vis-network: pip install 'gemrag[view]'") from exc
    try:
        return (
            base.joinpath("vis-network.min.js").read_text(encoding="utf-8"),
            base.joinpath("vis-network.css").read_text(encoding="utf-8"),
        )
    except FileNotFoundError as exc:
        raise GemragError(f"the installed pyvis does not ship {VIS_NETWORK}/vis-network.min.js: {exc}") from exc


def spectrum_svg(spectrum: dict[str, Any] | None, selected: list[int], width: int = 300, height: int = 150) -> str:
    """The top eigenvalues of L as an inline SVG stem plot (paper III.B.1, "Analysis of Graph Spectrum").

    Args:
        spectrum: GEM's spectrum report (``top_eigenvalues``: floats in [-1, 1] by non-increasing |lambda|), or
            None.
        selected: 0-based positions of the eigenvalues whose eigenvectors became summary nodes (drawn in their
            theme's colour; the others grey).
        width, height: the drawing's size in CSS pixels.

    Returns:
        An ``<svg>`` element as text ("" when there is no spectrum).
    """
    values = [float(v) for v in (spectrum or {}).get("top_eigenvalues", [])]
    if not values:
        return ""
    left, right, top, bottom = 34, 8, 8, 22
    plot_w, plot_h = width - left - right, height - top - bottom
    step = plot_w / len(values)

    def y(v: float) -> float:
        return top + (1.0 - v) / 2.0 * plot_h

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="spectrum" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="top eigenvalues of L">',
        f'<line x1="{left}" y1="{y(0):.1f}" x2="{width - right}" y2="{y(0):.1f}" stroke="#888" stroke-width="1"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="#888" stroke-width="1"/>',
    ]
    for tick in (1.0, 0.5, 0.0, -0.5, -1.0):
        parts.append(
            f'<text x="{left - 4}" y="{y(tick) + 4:.1f}" text-anchor="end" font-size="10" fill="#555">{tick:g}</text>'
        )
    for i, v in enumerate(values):
        x = left + step * (i + 0.5)
        colour = PALETTE[selected.index(i) % len(PALETTE)] if i in selected else "#999"
        parts.append(
            f'<line x1="{x:.1f}" y1="{y(0):.1f}" x2="{x:.1f}" y2="{y(v):.1f}" stroke="{colour}" stroke-width="2"/>'
            f'<circle cx="{x:.1f}" cy="{y(v):.1f}" r="3.5" fill="{colour}"><title>lambda_{i + 1} = {v:.4f}</title>'
            f"</circle>"
            f'<text x="{x:.1f}" y="{height - 6}" text-anchor="middle" font-size="10" fill="#555">{i + 1}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _script_safe(text: str) -> str:
    """Text that cannot close the ``<script>``/``<style>`` element it is inlined in."""
    return text.replace("</script", "<\\/script").replace("</style", "<\\/style")


def render_html(data: ViewData, title: str) -> str:
    """The whole page as one HTML string (no external reference).

    Args:
        data: what to draw (:func:`gemrag.view.data.view_data`).
        title: the page title (escaped).

    Returns:
        The HTML text.

    Raises:
        GemragError: as :func:`vis_network_assets`.
    """
    vis_js, vis_css = vis_network_assets()
    here = resources.files("gemrag.view")
    template = here.joinpath("template.html").read_text(encoding="utf-8")
    payload = data.as_json_dict() | {"palette": list(PALETTE)}
    selected = [t["eigen_index"] for t in data.themes]
    # JSON inside a script element: "<" escaped so no "</script>" or "<!--" can appear in it
    blob = json.dumps(payload, ensure_ascii=False).replace("<", "\\u003c")
    fills = {
        "TITLE": html.escape(title),
        "VIS_CSS": _script_safe(vis_css),
        "VIEW_CSS": _script_safe(here.joinpath("view.css").read_text(encoding="utf-8")),
        "SPECTRUM_SVG": spectrum_svg(data.spectrum, selected),
        "DATA": blob,
        "VIS_JS": _script_safe(vis_js),
        "VIEW_JS": _script_safe(here.joinpath("view.js").read_text(encoding="utf-8")),
    }
    # one pass over the template: inserted text (vis-network, the data) is never scanned for placeholders
    return re.sub(r"\{\{([A-Z_]+)\}\}", lambda m: fills[m.group(1)], template)


def write_html(data: ViewData, path: str | Path, title: str) -> Path:
    """Write :func:`render_html` to ``path`` (UTF-8) and return the path.

    Raises:
        GemragError: as :func:`vis_network_assets`. OSError: the file cannot be written.
    """
    target = Path(path)
    target.write_text(render_html(data, title), encoding="utf-8")
    return target
