"""Pictures for the langhooks docs, drawn as inline SVG at build time.

Nothing is fetched and nothing is installed: every picture is computed here, in plain
Python, while Sphinx builds the page. Two directives:

``firing-order``
    A sequence diagram of one documented event list. The list is read from the
    ``<!-- events: NAME -->`` text block of the same page, the block that
    ``tests/chain/test_docs.py`` checks against the real runtime, so a picture cannot
    drift from the tested behaviour::

        ```{firing-order} two_tools
        ```

    On the pages named in the ``lh_firing_order_pages`` setting, every such list
    gets its diagram right after it without writing the directive.

``graph``
    Boxes on a grid joined by labelled arrows (a state diagram, a pipeline). Each
    line of the body is either ``node NAME COLUMN ROW "Label"`` (an optional
    ``final`` or ``start`` after the label styles it) or ``NAME -> NAME "label"``::

        ```{graph} A tool call
        node identified 0 0 "identified" start
        node reviewed 1 0 "reviewed"
        identified -> reviewed "on_tool_call_review"
        ```
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any, Final

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

__all__ = ["firing_order_svg", "graph_svg", "parse_graph", "setup", "wrap_label"]

BLOCK: Final = re.compile(r"<!-- events: (\w+) -->\n```text\n(.*?)\n```", re.DOTALL)

# Who makes each chain event happen: the lane its arrow starts from (the runtime,
# LLMChain, for every event not listed).
_SOURCE: Final = {
    "on_llm_call_start": "LLMChain",
    "on_llm_new_delta": "model",
    "on_llm_new_message": "model",
    "on_llm_call_complete": "model",
    "on_llm_error": "model",
    "on_llm_response_headers": "model",
    "on_llm_ratelimit_info": "model",
    "on_tool_pre_execution": "tool",
    "on_tool_progress": "tool",
    "on_tool_execution_completed": "tool",
    "on_tool_execution_failed": "tool",
    "on_tool_execution_exception": "tool",
}
_LANES: Final = ("LLMChain", "model", "tool", "handlers")
_COLOURS: Final = {
    "model": "#2563eb",
    "tool": "#059669",
    "LLMChain": "#475569",
    "error": "#dc2626",
}
_FONT: Final = "font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace"
#: A monospace character's width, in ems (0.6 for the usual monospace fonts).
_CHAR_WIDTH: Final = 0.61
#: The longest line of an arrow's label in a graph, in characters (longer ones wrap).
_LABEL_CHARS: Final = 12
#: The widest a picture is drawn, in px: the theme's text column (alabaster's 940 px
#: page less its 220 px sidebar and 2 x 30 px padding, less the figure's own room),
#: so that its text shows at the size it is drawn.
MAX_WIDTH: Final = 640


def _colour(event: str, lane: str) -> str:
    failing = ("error", "failed", "exception", "exceeded", "interrupted")
    if any(word in event for word in failing):
        return _COLOURS["error"]
    return _COLOURS[lane]


def firing_order_svg(lines: Sequence[str], *, title: str = "") -> str:
    """A sequence diagram of an event list as the runtime guide writes it.

    Args:
        lines: One event a line: the method name, then an optional tool name and an
            optional ``xN`` repeat count (``on_llm_new_delta x3``).
        title: Read by screen readers as the picture's name.

    Returns:
        An ``<svg>`` element.
    """
    # Lanes close together and the width taken from the longest label, so that
    # the picture fits the theme's text column at full size (see
    # tests/test_docs_diagrams.py, which checks the rendered text size).
    lane_x = {lane: 60 + 85 * i for i, lane in enumerate(_LANES)}
    row, top = 24, 56
    parts: list[str] = []
    y = top
    calls = 0
    for line in lines:
        event, *rest = line.split()
        if event == "on_run_start":
            calls += 1
            if calls > 1:
                parts.append(
                    f'<line x1="4" x2="{lane_x["handlers"] + 40}" y1="{y - 6}" '
                    f'y2="{y - 6}" stroke="#94a3b8" stroke-dasharray="2 4"/>'
                )
            parts.append(
                f'<text x="6" y="{y + 8}" font-size="11" fill="#64748b" '
                f'style="{_FONT}">call {calls}</text>'
            )
        lane = _SOURCE.get(event, "LLMChain")
        colour = _colour(event, lane)
        x1, x2 = lane_x[lane], lane_x["handlers"]
        label = " ".join([event, *rest])
        parts.append(
            f'<line x1="{x1}" y1="{y + 10}" x2="{x2 - 6}" y2="{y + 10}" '
            f'stroke="{colour}" stroke-width="1.5" marker-end="url(#arrow)"/>'
            f'<circle cx="{x1}" cy="{y + 10}" r="3" fill="{colour}"/>'
            f'<text x="{x2 + 8}" y="{y + 14}" font-size="12" fill="{colour}" '
            f'style="{_FONT}">{escape(label)}</text>'
        )
        y += row
    longest = max((len(" ".join(line.split())) for line in lines), default=0)
    width = lane_x["handlers"] + 8 + round(longest * _CHAR_WIDTH * 12) + 12
    height = y + 16
    heads = "".join(
        f'<rect x="{x - 41}" y="8" width="82" height="26" rx="5" fill="#f1f5f9" '
        f'stroke="#94a3b8"/><text x="{x}" y="26" font-size="12" text-anchor="middle" '
        f'style="{_FONT}">{lane}</text>'
        f'<line x1="{x}" x2="{x}" y1="34" y2="{height - 8}" stroke="#cbd5e1" '
        f'stroke-dasharray="4 3"/>'
        for lane, x in lane_x.items()
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" '
        f'viewBox="0 0 {width} {height}" width="{width}" class="lh-diagram">'
        f"<title>{escape(title)}</title>"
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" '
        'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
        '<path d="M 0 0 L 10 5 L 0 10 z" fill="context-stroke"/></marker></defs>'
        f"{heads}{''.join(parts)}</svg>"
    )


def parse_graph(
    body: Sequence[str],
) -> tuple[dict[str, tuple[int, int, str, str]], list[tuple[str, str, str]]]:
    """Read a ``graph`` directive's body.

    Returns:
        The nodes (name -> column, row, label, style) and the edges (from, to, label).

    Raises:
        ValueError: a line that is neither a node nor an edge, or an edge naming a
            node that was not declared.
    """
    found: dict[str, tuple[int, int, str, str]] = {}
    edges: list[tuple[str, str, str]] = []
    for raw in body:
        if not raw.strip():
            continue
        words = shlex.split(raw)
        if words[0] == "node" and len(words) in (5, 6):
            style = words[5] if len(words) == 6 else ""
            found[words[1]] = (int(words[2]), int(words[3]), words[4], style)
        elif len(words) in (3, 4) and words[1] == "->":
            edges.append((words[0], words[2], words[3] if len(words) == 4 else ""))
        else:
            raise ValueError(f"graph: cannot read the line {raw!r}")
    for start, end, _ in edges:
        for name in (start, end):
            if name not in found:
                raise ValueError(f"graph: the edge names an undeclared node {name!r}")
    return found, edges


def wrap_label(label: str, width: int = _LABEL_CHARS) -> list[str]:
    """``label`` in lines of at most ``width`` characters: broken at spaces, and a
    longer word after an underscore (a word with none stays whole)."""
    pieces: list[str] = []
    for word in label.split():
        if len(word) <= width:
            pieces.append(word)
            continue
        part = ""
        for bit in re.findall(r"[^_]*_|[^_]+$", word):
            if part and len(part) + len(bit) > width:
                pieces.append(part)
                part = ""
            part += bit
        pieces.append(part)
    lines: list[str] = []
    for piece in pieces:
        joined = f"{lines[-1]} {piece}" if lines else piece
        if lines and len(joined) <= width and not lines[-1].endswith("_"):
            lines[-1] = joined
        else:
            lines.append(piece)
    return lines


def graph_svg(
    graph: tuple[dict[str, tuple[int, int, str, str]], list[tuple[str, str, str]]],
    *,
    title: str = "",
) -> str:
    """Boxes on a grid joined by labelled arrows, as an ``<svg>`` element.

    The cells are small enough for four columns to fit the theme's text column at
    full size; an arrow's label is wrapped (``wrap_label``) and drawn over the
    arrow's middle, in the gap between two rows or two columns.
    """
    found, edges = graph
    columns = max(c for c, _, _, _ in found.values()) + 1
    rows = max(r for _, r, _, _ in found.values()) + 1
    box_w, box_h, cell_h = 136, 36, 96
    # As wide apart as the column allows (MAX_WIDTH), so that a label fits
    # between two boxes side by side.
    cell_w = min(230, (MAX_WIDTH - 40 - box_w) // max(columns - 1, 1))
    font, line_h = 11, 13

    def centre(name: str) -> tuple[float, float]:
        column, row, _, _ = found[name]
        return 20 + column * cell_w + box_w / 2, 20 + row * cell_h + box_h / 2

    parts: list[str] = []
    labels: list[str] = []  # drawn last, over lines and boxes
    pairs = {(start, end) for start, end, _ in edges}
    for start, end, label in edges:
        (x1, y1), (x2, y2) = centre(start), centre(end)
        dx, dy = x2 - x1, y2 - y1
        if start == end:
            path = (
                f"M {x1 - 30} {y1 - box_h / 2} C {x1 - 40} {y1 - box_h * 1.6} "
                f"{x1 + 40} {y1 - box_h * 1.6} {x1 + 30} {y1 - box_h / 2}"
            )
            lx, ly = x1, y1 - box_h * 1.35
        else:
            # Leave each box from the side facing the other one.
            scale = min(
                (box_w / 2 + 4) / abs(dx) if dx else float("inf"),
                (box_h / 2 + 4) / abs(dy) if dy else float("inf"),
            )
            sx, sy = x1 + dx * scale, y1 + dy * scale
            ex, ey = x2 - dx * scale, y2 - dy * scale
            # Bend an arrow only when one runs back the other way, so the two part.
            bend = 0.18 if (end, start) in pairs else 0.0
            mx, my = (sx + ex) / 2 - dy * bend, (sy + ey) / 2 + dx * bend
            path = f"M {sx:.1f} {sy:.1f} Q {mx:.1f} {my:.1f} {ex:.1f} {ey:.1f}"
            lx, ly = (sx + 2 * mx + ex) / 4, (sy + 2 * my + ey) / 4
        parts.append(
            f'<path d="{path}" fill="none" stroke="#64748b" stroke-width="1.4" '
            f'marker-end="url(#garrow)"/>'
        )
        if label:
            flat = start != end and abs(dy) < 1
            chars = int((cell_w - box_w - 4) / (font * _CHAR_WIDTH)) if flat else 0
            wrapped = wrap_label(label, max(chars, _LABEL_CHARS) if not flat else chars)
            first = ly - (len(wrapped) - 1) * line_h / 2 + font / 3
            spans = "".join(
                f'<tspan x="{lx:.1f}" y="{first + i * line_h:.1f}">'
                f"{escape(text)}</tspan>"
                for i, text in enumerate(wrapped)
            )
            labels.append(
                f'<text font-size="{font}" text-anchor="middle" fill="#334155" '
                f'stroke="#fff" stroke-width="4" paint-order="stroke" '
                f'style="{_FONT}">{spans}</text>'
            )
    fills = {"start": "#dbeafe", "final": "#dcfce7", "error": "#fee2e2", "": "#f8fafc"}
    for column, row, label, style in found.values():
        x, y = 20 + column * cell_w, 20 + row * cell_h
        width = 3 if style in ("final", "error") else 1.2
        parts.append(
            f'<rect x="{x}" y="{y}" width="{box_w}" height="{box_h}" rx="8" '
            f'fill="{fills.get(style, fills[""])}" stroke="#475569" '
            f'stroke-width="{width}"/><text x="{x + box_w / 2}" y="{y + 23}" '
            f'font-size="12" text-anchor="middle" style="{_FONT}">'
            f"{escape(label)}</text>"
        )
    width = 40 + (columns - 1) * cell_w + box_w
    height = 40 + (rows - 1) * cell_h + box_h
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" '
        f'viewBox="0 0 {width} {height}" width="{width}" class="lh-diagram">'
        f"<title>{escape(title)}</title>"
        '<defs><marker id="garrow" viewBox="0 0 10 10" refX="9" refY="5" '
        'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
        '<path d="M 0 0 L 10 5 L 0 10 z" fill="#64748b"/></marker></defs>'
        f"{''.join(parts)}{''.join(labels)}</svg>"
    )


def _figure(svg: str, caption: str) -> list[nodes.Node]:
    html = f'<figure class="lh-figure">{svg}<figcaption>{escape(caption)}</figcaption>'
    return [nodes.raw("", html + "</figure>", format="html")]


class FiringOrder(SphinxDirective):
    """``firing-order NAME``: the sequence diagram of this page's event list NAME."""

    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        name = self.arguments[0]
        source = Path(self.env.doc2path(self.env.docname)).read_text(encoding="utf-8")
        lists = {key: body.splitlines() for key, body in BLOCK.findall(source)}
        if name not in lists:
            raise self.error(f"no '<!-- events: {name} -->' list on this page")
        caption = f"The events of “{name.replace('_', ' ')}”, as the test records them."
        return _figure(firing_order_svg(lists[name], title=name), caption)


class Graph(SphinxDirective):
    """``graph CAPTION``: boxes and arrows from a small text description."""

    required_arguments = 0
    optional_arguments = 1
    final_argument_whitespace = True
    has_content = True

    def run(self) -> list[nodes.Node]:
        caption = self.arguments[0] if self.arguments else ""
        try:
            graph = parse_graph(list(self.content))
        except ValueError as error:
            raise self.error(str(error)) from None
        return _figure(graph_svg(graph, title=caption), caption)


def _add_firing_orders(app: Sphinx, docname: str, source: list[str]) -> None:
    """Put a ``firing-order`` diagram after every event list of the chosen pages."""
    if docname in app.config.lh_firing_order_pages:
        source[0] = BLOCK.sub(
            lambda found: f"{found[0]}\n\n```{{firing-order}} {found[1]}\n```\n",
            source[0],
        )


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the directives and the few lines of CSS they need."""
    app.add_config_value("lh_firing_order_pages", [], "env")
    app.add_directive("firing-order", FiringOrder)
    app.add_directive("graph", Graph)
    app.connect("source-read", _add_firing_orders)
    app.add_css_file("lh_diagrams.css")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
