"""The documentation (docs/, mkdocs.yml): the site builds with `mkdocs build --strict`, so a
link or an anchor that no longer resolves fails the suite, and the reference pages name
exactly what the code accepts: every changefeed config key, sink URI parameter, service
setting, CLI option and HTTP endpoint, read from the tables the code itself uses."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import typer

from ticdc_sim import config
from ticdc_sim.cli import app
from ticdc_sim.service.routes import schema_registry
from ticdc_sim.service.settings import Settings

ROOT = Path(__file__).parents[1]
DOCS = ROOT / "docs"
OPENAPI = ROOT / "openapi" / "openapi.json"
NAMED = re.compile(r"`([^`]+)`")


def page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def sections(text: str) -> dict[str, str]:
    """A page's text under each heading, by the heading's text."""
    found: dict[str, str] = {}
    heading = ""
    for line in text.splitlines():
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
            found.setdefault(heading, "")
        else:
            found[heading] = found.get(heading, "") + line + "\n"
    return found


def first_cells(text: str) -> list[str]:
    """The first cell of every table row of `text` (header and rule rows left out)."""
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    cells = [row.split(" | ")[0].removeprefix("| ").strip() for row in rows]
    return [c for c in cells if c.startswith("`")]


def blocks(language: str) -> list[tuple[str, str]]:
    """Every fenced block of `language` in the docs: (`page.md block n`, its text)."""
    fence = re.compile(rf"^```{language}\n(.*?)^```", re.S | re.M)
    return [
        (f"{path.name} block {n}", found.group(1))
        for path in sorted(DOCS.glob("*.md"))
        for n, found in enumerate(fence.finditer(path.read_text(encoding="utf-8")), 1)
    ]


# -- the site --------------------------------------------------------------------------------


def test_the_site_builds_strictly_and_loads_nothing_from_the_network(tmp_path: Path) -> None:
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed (it is in the dev extra: pip install -e '.[dev]')")
    site = tmp_path / "site"
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert build.returncode == 0, build.stderr
    assert (site / "openapi" / "openapi.json").read_bytes() == OPENAPI.read_bytes()
    nav = re.findall(r":\s*(\S+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), re.M)
    assert sorted(nav) == sorted(p.name for p in DOCS.glob("*.md"))
    for name in nav:
        assert (site / name.replace(".md", ".html")).is_file(), name
    remote = re.compile(
        r"""<(?:script|img)[^>]*\ssrc="(?:https?:)?//|<link[^>]*\shref="(?:https?:)?//"""
    )
    loaded = {
        str(html.relative_to(site)): remote.findall(html.read_text(encoding="utf-8"))
        for html in site.rglob("*.html")
    }
    assert {name: found for name, found in loaded.items() if found} == {}


def test_the_readme_links_to_the_docs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    linked = re.findall(r"\]\((docs/[^)#]+)", readme)
    assert "docs/index.md" in linked
    assert [path for path in linked if not (ROOT / path).is_file()] == []


# -- the references name what the code accepts ------------------------------------------------


def config_sections() -> dict[tuple[str, ...], str]:
    """docs/changefeed-config.md's text per TOML table: `## [sink.kafka-config]` ... and the
    top level."""
    found: dict[tuple[str, ...], str] = {}
    for heading, text in sections(page("changefeed-config.md")).items():
        table = re.fullmatch(r"`\[\[?([a-z.-]+)\]\]?`", heading)
        if table is not None:
            found[tuple(table.group(1).split("."))] = text
        elif heading == "Top-level keys":
            found[()] = text
    return found


def test_the_config_reference_names_every_key_where_it_belongs() -> None:
    paths = {*config._TOML_SETTINGS, *config._TOML_IGNORED, *config._TOML_LATER}
    tables = config_sections()
    assert config._DISPATCHERS in tables  # a table of its own: [[sink.dispatchers]]
    missing = [
        ".".join(path) for path in sorted(paths) if f"`{path[-1]}`" not in tables.get(path[:-1], "")
    ]
    assert missing == []
    rule_keys = config._TOML.rule_keys
    assert sorted(k for k in rule_keys if f"`{k}`" not in tables[config._DISPATCHERS]) == []
    # and what the tables list as keys exists
    known = paths | {(*config._DISPATCHERS, k) for k in rule_keys}
    listed = {
        (*table, name)
        for table, text in tables.items()
        for cell in first_cells(text)
        for name in NAMED.findall(cell)
    }
    assert sorted(".".join(p) for p in listed - known) == []
    # the open API's names that are not the TOML's in snake case
    text = page("changefeed-config.md")
    assert [name for name in config._JSON_NAMES.values() if f"`{name}`" not in text] == []


def test_the_sink_uri_reference_names_every_parameter_and_scheme() -> None:
    text = page("sink-uri.md")
    params = {*config._URI_PARAMS, *config._URI_IGNORED}
    assert sorted(p for p in params if f"`{p}`" not in text) == []
    tables = sections(text)
    listed = {
        name
        for heading in ("What the records are", "Kafka producer parameters")
        for cell in first_cells(tables[heading])
        for name in NAMED.findall(cell)
    }
    assert sorted(listed - params) == []
    schemes = (*config.SIMULATED_SCHEMES, *config.LATER_SCHEMES)
    assert [s for s in schemes if f"`{s}://" not in text] == []


def test_the_service_page_names_every_setting() -> None:
    text = page("service.md")
    variables = {f"TICDC_SIM_{name.upper()}" for name in Settings.model_fields}
    table = {
        name for cell in first_cells(sections(text)["Settings"]) for name in NAMED.findall(cell)
    }
    assert sorted(variables - table) == []
    mentioned = {
        found
        for path in DOCS.glob("*.md")
        for found in re.findall(r"TICDC_SIM_[A-Z0-9_]+", path.read_text())
    }
    assert sorted(mentioned - variables) == []


def test_the_http_page_names_every_endpoint() -> None:
    document = json.loads(OPENAPI.read_text())
    endpoints = {
        f"{method.upper()} {path}"
        for path, operations in document["paths"].items()
        for method in operations
    }
    text = sections(page("http-api.md"))
    # the schema registry's section: its endpoints (relative to its base URL), not FastAPI's
    registry = set(ENDPOINT.findall(text.pop("The schema registry, Confluent's REST API")))
    listed = set(ENDPOINT.findall("".join(text.values())))
    assert sorted(endpoints - listed) == []
    assert sorted(listed - endpoints) == []
    served = {f"{method} /{'/'.join(path)}" for method, path, _ in schema_registry.ROUTES}
    assert sorted(served - registry) == []
    assert sorted(registry - served) == []


ENDPOINT = re.compile(r"`((?:GET|POST|PUT|DELETE|PATCH) /[^`]*)`")


def test_the_cli_page_names_every_command_and_option() -> None:
    command = typer.main.get_command(app)
    assert isinstance(command, typer.core.TyperGroup)
    documented = sections(page("cli.md"))
    missing = []
    for name, sub in command.commands.items():
        text = documented.get(name)
        if text is None:
            missing.append(name)
            continue
        options = [o for p in sub.params for o in (*p.opts, *p.secondary_opts) if o.startswith("-")]
        missing += [f"{name} {o}" for o in options if f"`{o}" not in text]
    assert missing == []


# -- the examples work ------------------------------------------------------------------------


@pytest.mark.parametrize(("where", "text"), blocks("toml"), ids=[w for w, _ in blocks("toml")])
def test_every_toml_example_is_a_config_the_reader_takes(where: str, text: str) -> None:
    assert tomllib.loads(text)
    config.parse_changefeed_toml(text, where)


def test_every_json_replica_config_example_is_read() -> None:
    bodies = [json.loads(text) for _, text in blocks("json")]
    configs = [body["replica_config"] for body in bodies if "replica_config" in body]
    assert configs
    for body in configs:
        assert config.parse_replica_config(body)


def test_every_sink_uri_example_parses() -> None:
    uri = re.compile(r"""(?:--sink-uri |"sink_uri": )["']([a-z+]+://[^"'$]+)["']""")
    found = {
        (path.name, text)
        for path in sorted(DOCS.glob("*.md"))
        for text in uri.findall(path.read_text(encoding="utf-8"))
    }
    assert len(found) > 10
    for _, text in sorted(found):
        assert config.changefeed(text).sink.text == text


@pytest.mark.parametrize(("where", "text"), blocks("python"), ids=[w for w, _ in blocks("python")])
def test_every_python_example_compiles(where: str, text: str) -> None:
    compile(text, where, "exec")
