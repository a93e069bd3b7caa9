"""The docs' pictures are drawn from the tested event lists and the pages' own text."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.chain.test_docs import documented

DOCS = Path(__file__).resolve().parents[1] / "docs"
GRAPH = re.compile(r"```\{graph\}[^\n]*\n(.*?)\n```", re.DOTALL)


def _extension() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "lh_diagrams", DOCS / "_ext" / "lh_diagrams.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


diagrams: Any = _extension()


class TestFiringOrderDiagrams:
    """Each sequence diagram draws exactly the list the runtime test checks."""

    def test_the_runtime_guide_gets_a_diagram_per_list(self) -> None:
        """The build draws every event list of docs/guide/runtime.md."""
        conf = (DOCS / "conf.py").read_text()
        assert 'lh_firing_order_pages = ["guide/runtime"]' in conf
        page = (DOCS / "guide" / "runtime.md").read_text()
        source = [page]
        app: Any = type("App", (), {})()
        app.config = type("Config", (), {"lh_firing_order_pages": ["guide/runtime"]})
        diagrams._add_firing_orders(app, "guide/runtime", source)
        names = re.findall(r"```\{firing-order\} (\w+)", source[0])
        assert names == list(documented())

    @pytest.mark.parametrize("name", sorted(documented()))
    def test_one_arrow_per_documented_event(self, name: str) -> None:
        """A diagram has one arrow and one label for each line of its list."""
        lines = documented()[name]
        svg = diagrams.firing_order_svg(lines, title=name)
        assert svg.count('marker-end="url(#arrow)"') == len(lines)
        shown = re.findall(r'style="[^"]*">(on_\w+[^<]*)</text>', svg)
        assert shown == lines

    def test_each_run_is_marked(self) -> None:
        """A list holding three runs shows "call 1" to "call 3"."""
        svg = diagrams.firing_order_svg(documented()["interrupt_approve"])
        assert re.findall(r">call (\d)<", svg) == ["1", "2", "3"]

    def test_labels_are_escaped(self) -> None:
        """Text from a list is escaped, never markup."""
        svg = diagrams.firing_order_svg(["on_run_start <b>"])
        assert "&lt;b&gt;" in svg
        assert "<b>" not in svg


class TestGraphs:
    """Every graph on every page is well formed."""

    @pytest.mark.parametrize(
        "page", sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    )
    def test_graphs_on_the_page_parse_and_draw(self, page: str) -> None:
        """Each graph declares the nodes its arrows join and draws a box per node."""
        for body in GRAPH.findall((DOCS / page).read_text()):
            found, edges = diagrams.parse_graph(body.splitlines())
            svg = diagrams.graph_svg((found, edges))
            assert svg.count("<rect") == len(found)
            assert svg.count('marker-end="url(#garrow)"') == len(edges)

    def test_a_line_that_is_neither_node_nor_edge_is_refused(self) -> None:
        """A typo in a graph fails the docs build instead of drawing nonsense."""
        with pytest.raises(ValueError, match="cannot read"):
            diagrams.parse_graph(["nod a 0 0 'A'"])

    def test_an_edge_to_an_undeclared_node_is_refused(self) -> None:
        """An arrow must join two declared boxes."""
        with pytest.raises(ValueError, match="undeclared node 'b'"):
            diagrams.parse_graph(['node a 0 0 "A"', 'a -> b "go"'])


def _content_width() -> int:
    """The theme's text column in px: alabaster's page width less its sidebar and
    the body's 2 x 30 px padding (docs/conf.py's html_theme_options win)."""
    spec = importlib.util.find_spec("alabaster")
    assert spec is not None
    assert spec.origin is not None
    theme = (Path(spec.origin).parent / "theme.conf").read_text()
    conf = (DOCS / "conf.py").read_text()
    sizes = {}
    for key in ("page_width", "sidebar_width"):
        found = re.search(rf'"{key}":\s*"(\d+)px"', conf) or re.search(
            rf"^{key} = (\d+)px$", theme, re.M
        )
        assert found, key
        sizes[key] = int(found.group(1))
    return sizes["page_width"] - sizes["sidebar_width"] - 60


def _every_picture() -> list[tuple[str, str]]:
    """(name, svg) of every picture the docs build draws."""
    pictures = [
        (f"firing order {name}", diagrams.firing_order_svg(lines))
        for name, lines in documented().items()
    ]
    for path in sorted(DOCS.rglob("*.md")):
        for i, body in enumerate(GRAPH.findall(path.read_text())):
            graph = diagrams.parse_graph(body.splitlines())
            pictures.append(
                (f"{path.relative_to(DOCS)} graph {i}", diagrams.graph_svg(graph))
            )
    return pictures


class TestReadableSize:
    """In the built page, every picture's text shows at 11 px or more."""

    def test_the_content_width_is_the_themes(self) -> None:
        """The column the pictures are drawn for is alabaster's text column."""
        assert _content_width() >= diagrams.MAX_WIDTH

    @pytest.mark.parametrize(
        ("name", "svg"), [pytest.param(*p, id=p[0]) for p in _every_picture()]
    )
    def test_text_renders_at_11_px_or_more(self, name: str, svg: str) -> None:
        """The figure's CSS shrinks an SVG wider than the column to fit it
        (max-width: 100%); its smallest font size times that scale is >= 11 px."""
        width = float(re.search(r'<svg [^>]*width="([\d.]+)"', svg).group(1))  # type: ignore[union-attr]
        scale = min(1.0, _content_width() / width)
        smallest = min(float(size) for size in re.findall(r'font-size="([\d.]+)"', svg))
        assert smallest * scale >= 11, (
            f"{name}: {width} px wide, text {smallest * scale:.1f} px"
        )

    def test_long_labels_wrap(self) -> None:
        """A label wraps at spaces, and a long name after an underscore."""
        assert diagrams.wrap_label("on_tool_execution_completed") == [
            "on_tool_",
            "execution_",
            "completed",
        ]
        assert diagrams.wrap_label("retryable: on_llm_retry") == [
            "retryable:",
            "on_llm_retry",
        ]
        assert diagrams.wrap_label("UpdateArguments") == ["UpdateArguments"]
