"""bench/charts.py reads the benchmarks page's tables: every chart comment there names a table
and columns that exist (a renamed column fails here, not when the charts are next drawn), and
each chart's PNG is beside the page."""
from __future__ import annotations

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # bench/ is the repository's, never installed
    sys.path.insert(0, str(ROOT))

from bench import charts  # noqa: E402


def test_every_chart_of_the_benchmarks_page_parses_and_is_drawn():
    assert charts.main(["--check"]) == 0
    found = charts.parse(charts.PAGE.read_text())
    assert len(found) >= 10
    for chart in found:
        assert (charts.PAGE.parent / chart.name).is_file(), f"run python bench/charts.py: " \
                                                           f"{chart.name} is missing"


def test_a_chart_naming_a_missing_column_is_an_error(tmp_path, capsys):
    page = tmp_path / "index.md"
    page.write_text("## Speed\n\n<!-- chart: speed.png; bars: relsim us, nosuch us -->\n\n"
                    "| variant | relsim us |\n|---|---|\n| a | 1.5 |\n")
    assert charts.main(["--check", "--page", str(page)]) == 1
    assert "no column 'nosuch us'" in capsys.readouterr().err
