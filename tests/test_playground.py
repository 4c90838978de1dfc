"""The playground page and the API docs in a real browser: Debian's headless Chromium driven
by Playwright, against `ticdc-sim serve` in a subprocess. A script runs through the page and
its records appear per partition, decoded and raw, TSOs and BIGINTs digit for digit; /docs
renders with nothing fetched from outside the service."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from support_service import Server

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Server]]:
    binary = chromium()
    if binary is None:
        pytest.skip("no chromium (scripts/ensure-chromium installs Debian's when root)")
    server = Server.start(tmp_path_factory.mktemp("playground") / "data")
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=binary, args=["--no-sandbox"])
            tab = browser.new_page(viewport={"width": 1366, "height": 768})  # a laptop
            tab.goto(server.http + "/")
            yield tab, server
            browser.close()
    finally:
        server.stop()


def run(tab: Any, sql: str, dispatcher: str, partitions: int) -> None:
    """`sql` through the page into a canal-json changefeed, until every record it sent is
    on the page."""
    tab.fill("#sql", sql)
    tab.select_option("#protocol", "canal-json")
    tab.select_option("#dispatcher", dispatcher)
    tab.fill("#partitions", str(partitions))
    tab.click("#run")
    done = re.compile(r"done: (\d+) records sent")
    sync_api.expect(tab.locator("#status")).to_have_text(done, timeout=30_000)
    match = done.fullmatch(tab.locator("#status").inner_text())
    assert match is not None
    # every record the changefeed sent is on the page, under its partition, live
    sync_api.expect(tab.locator("#count")).to_have_text(f"{match[1]} records", timeout=30_000)


def test_a_script_runs_through_the_page(page: tuple[Any, Server]) -> None:
    tab, server = page
    assert tab.title() == "ticdc-sim playground"
    run(
        tab,
        "CREATE TABLE pets (id INT PRIMARY KEY, name VARCHAR(10));\n"
        "INSERT INTO pets VALUES (1, 'rex'), (2, 'tom'), (3, 'kit'), (4, 'bo');\n"
        "UPDATE pets SET name = 'max' WHERE id = 2;\n",
        "index-value",
        2,
    )
    columns = tab.locator("#partitions-view .partition h2")
    assert columns.all_inner_texts() == ["partition 0", "partition 1"]
    events = tab.locator("#partitions-view .event").all_inner_texts()
    inserts = sorted(e for e in events if e.startswith("INSERT"))
    assert inserts == [
        'INSERT test.pets {"id":1,"name":"rex"}',
        'INSERT test.pets {"id":2,"name":"tom"}',
        'INSERT test.pets {"id":3,"name":"kit"}',
        'INSERT test.pets {"id":4,"name":"bo"}',
    ]
    assert 'UPDATE test.pets {"id":2,"name":"max"}' in events
    # canal-json sends DDL to partition 0 only (tiflow: getDDLDispatchRule)
    first = tab.locator('[data-partition="0"] .event').all_inner_texts()
    assert first[0].startswith("DDL CREATE TABLE `pets`")
    assert sum(e.startswith("DDL") for e in events) == 1
    # the raw records are there to show: canal-json's own bytes
    assert not tab.locator(".raw").first.is_visible()
    tab.check("#raw")
    raw = tab.locator(".raw").first
    assert raw.is_visible() and '"isDdl":true' in raw.inner_text()
    statements = tab.locator("#statements li").all_inner_texts()
    assert statements[1].endswith("4 rows affected, committed at " + statements[1].split()[-1])


def test_tsos_and_bigints_are_shown_exactly(page: tuple[Any, Server]) -> None:
    """A TSO (448999999999836208) and BIGINT UNSIGNED values are past a JavaScript Number's
    exact integers: the page shows them as the service sent them, each on one line beside
    its offset badge."""
    tab, server = page
    run(
        tab,
        "CREATE TABLE u (id BIGINT UNSIGNED PRIMARY KEY, v BIGINT);\n"
        "INSERT INTO u VALUES (18446744073709551615, -9223372036854775807);\n",
        "default",
        1,
    )
    # what the service sent, read exactly (Python's ints)
    cluster = httpx.get(f"{server.http}/sim/v1/clusters").json()[-1]["id"]
    url = f"{server.http}/sim/v1/clusters/{cluster}/changefeeds/playground/messages"
    events = [d for m in httpx.get(url).json()["messages"] for d in m["decoded"]]
    checkpoints = [f"checkpoint {d['ts']}" for d in events if d["type"] == "checkpoint"]
    commits = sorted({d["commit_ts"] for d in events if d["type"] in ("ddl", "insert")})
    assert all(ts > 1 << 53 for ts in commits) and checkpoints
    shown = tab.locator("#partitions-view .event").all_inner_texts()
    assert [e for e in shown if e.startswith("checkpoint")] == checkpoints
    assert 'INSERT test.u {"id":18446744073709551615,"v":-9223372036854775807}' in shown
    statements = tab.locator("#statements li").all_inner_texts()
    assert [int(s.rsplit(" ", 1)[1]) for s in statements] == commits
    assert statements[1].endswith(f"1 row affected, committed at {commits[1]}")
    # the badge beside the text, never inside a number: each checkpoint on one line
    for card in tab.locator("#partitions-view li.checkpoint").all():
        text, badge = card.locator(".event").bounding_box(), card.locator(".offset").bounding_box()
        assert text is not None and badge is not None
        assert text["height"] < 20 and text["x"] + text["width"] <= badge["x"]


def test_an_error_is_shown_where_it_is(page: tuple[Any, Server]) -> None:
    tab, server = page
    before = {c["id"] for c in httpx.get(f"{server.http}/sim/v1/clusters").json()}
    tab.fill("#sql", "CREATE TABLE a (id INT PRIMARY KEY);\nINSERT INTO a VALUES (1), (1);\n")
    tab.select_option("#protocol", "open-protocol")
    tab.click("#run")
    status = tab.locator("#status")
    stopped = re.compile(r"stopped at an error; \d+ records sent")
    sync_api.expect(status).to_have_text(stopped, timeout=30_000)
    assert "failed" in (status.get_attribute("class") or "")
    failed = tab.locator("#statements li.failed").inner_text()
    assert failed.startswith("line 2:1 ERROR 1062: Duplicate entry '1'")
    # the page removed the cluster of its previous run
    after = {c["id"] for c in httpx.get(f"{server.http}/sim/v1/clusters").json()}
    assert len(after - before) == 1 and len(before - after) == 1


def test_the_api_docs_render_offline(page: tuple[Any, Server]) -> None:
    """/docs: Swagger UI renders every operation with nothing fetched from elsewhere (the
    assets are the service's own, from the fastapi-offline package)."""
    playground, server = page
    browser = playground.context.browser
    assert browser is not None
    tab = browser.new_page()
    outside: list[str] = []
    tab.on(
        "request",
        lambda r: None if r.url.startswith((server.http, "data:")) else outside.append(r.url),
    )
    tab.goto(server.http + "/docs")
    operations = tab.locator(".opblock-summary")
    sync_api.expect(operations.first).to_be_visible(timeout=30_000)
    shown = {" ".join(o.split()[:2]) for o in operations.all_inner_texts()}
    documented = httpx.get(f"{server.http}/openapi.json").json()["paths"]
    assert shown == {f"{m.upper()} {p}" for p, ops in documented.items() for m in ops}
    assert outside == []
    tab.close()


def test_records_the_changefeed_no_longer_keeps_are_counted_as_skipped(
    page: tuple[Any, Server], tmp_path: Path
) -> None:
    """A changefeed keeping one record: the tail's `gap` events reach the page as a count
    of skipped records, beside those shown; together they are every record sent."""
    browser = page[0].context.browser
    assert browser is not None
    server = Server.start(tmp_path / "data", retain_records="1")
    try:
        tab = browser.new_page()
        tab.goto(server.http + "/")
        rows = ", ".join(f"({i})" for i in range(10))
        tab.fill(
            "#sql", f"CREATE TABLE many (id INT PRIMARY KEY);\nINSERT INTO many VALUES {rows};\n"
        )
        tab.select_option("#protocol", "canal-json")
        tab.fill("#partitions", "1")
        tab.click("#run")
        done = re.compile(r"done: (\d+) records sent")
        sync_api.expect(tab.locator("#status")).to_have_text(done, timeout=30_000)
        match = done.fullmatch(tab.locator("#status").inner_text())
        assert match is not None
        counted = re.compile(r"(\d+) records, (\d+) skipped \(no longer kept\)")
        # the count grows as the tail's events arrive: wait until it covers every record sent
        tab.wait_for_function(
            """total => {
                const m = /(\\d+) records, (\\d+) skipped/.exec(
                    document.querySelector("#count").textContent);
                return m !== null && Number(m[1]) + Number(m[2]) >= total;
            }""",
            arg=int(match[1]),
            timeout=30_000,
        )
        # the 10 inserts are sent in one batch: at most one of them was still kept
        shown = tab.locator("#partitions-view li").count()
        found = counted.fullmatch(tab.locator("#count").inner_text())
        assert found is not None
        assert int(found[1]) == shown and int(found[1]) + int(found[2]) == int(match[1])
        assert int(found[2]) >= 9
        tab.close()
    finally:
        server.stop()
