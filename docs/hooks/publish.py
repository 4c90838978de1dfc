"""MkDocs hook: files of the repository published beside the pages, and the code style.

`mkdocs build --strict` accepts links to files of the site only, so a page cannot link
`openapi/openapi.json` or an example where they live. This hook adds them to the site as they
are at build time, so there is no copy to keep in step by hand; the highlighting style is
written from the Pygments that renders the code blocks, so the page needs nothing from the
network.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from pygments.formatters import HtmlFormatter

ROOT = Path(__file__).resolve().parents[2]

# repository files, published at the same path in the site
PUBLISHED = (
    "openapi/openapi.json",
    "examples/shop.sql",
    "examples/orders.sql",
    "examples/shop-workload.yaml",
    "bench/mixed-workload.yaml",
    "src/ticdc_sim/encoders/simple_avro.json",
)
STYLE = "css/pygments.css"  # mkdocs.yml's extra_css


def on_files(files: Files, config: MkDocsConfig) -> Files:
    for path in PUBLISHED:
        files.append(File.generated(config, path, abs_src_path=str(ROOT / path)))
    style = HtmlFormatter(style="default").get_style_defs(".codehilite")
    files.append(File.generated(config, STYLE, content=style))
    return files
