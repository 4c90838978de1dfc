"""Creates a changefeed on a running ticdc-sim from a file, through TiCDC's open API:
the one-shot `changefeed` service of compose.yaml runs it once the service is up.

    python3 create-changefeed.py SERVICE_URL CHANGEFEED_JSON

CHANGEFEED_JSON is the body of `POST /api/v2/changefeeds`, as TiCDC's open API takes it:
`changefeed_id`, `sink_uri` and `replica_config` (the changefeed TOML's settings in TiCDC's
JSON names). It waits, up to TICDC_SIM_WAIT_S seconds (120), for the service to answer
/readyz and for a kafka:// sink's brokers to accept connections, then creates the
changefeed; one that exists already is left as it is. TICDC_SIM_TOKEN, when set, is sent
as the bearer token. Exit status: 0 created or there, 1 refused (the service's error is
printed), 2 a bad file or nothing to talk to.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        return _fail(2, "usage: create-changefeed.py SERVICE_URL CHANGEFEED_JSON")
    service, path = argv[1].rstrip("/"), Path(argv[2])
    try:
        body = _body(path)
    except ValueError as e:
        return _fail(2, str(e))
    deadline = time.monotonic() + float(os.environ.get("TICDC_SIM_WAIT_S", "120"))
    if not _wait(f"{service}/readyz", deadline, _answers):
        return _fail(2, f"{service}/readyz did not answer within the wait")
    for broker in _brokers(body["sink_uri"]):
        if not _wait(broker, deadline, _listens):
            return _fail(2, f"kafka broker {broker} did not accept connections within the wait")
    try:
        status, answer = _post(f"{service}/api/v2/changefeeds", body)
    except OSError as e:
        return _fail(2, f"{service}: the request failed: {e}")
    name = f"{body.get('namespace', 'default')}/{body.get('changefeed_id', '')}"
    if status == 200:
        print(f"changefeed {name} created: {answer.get('sink_uri', body['sink_uri'])}")
        return 0
    if answer.get("error_code") == "CDC:ErrChangeFeedAlreadyExists":
        print(f"changefeed {name} exists already; left as it is")
        return 0
    code, message = answer.get("error_code", f"HTTP {status}"), answer.get("error_msg", answer)
    return _fail(1, f"{path}: changefeed {name} refused: {code}: {message}")


def _body(path: Path) -> dict[str, Any]:
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ValueError(f"{path}: cannot read it: {e.strerror}") from e
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text (byte {e.start})") from e
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}:{e.lineno}:{e.colno}: not JSON: {e.msg}") from e
    if not isinstance(body, dict):
        raise ValueError(f"{path}: expected a JSON object (the open API's changefeed config)")
    if not isinstance(body.get("sink_uri"), str) or not body["sink_uri"]:
        raise ValueError(f"{path}: sink_uri: required, a sink URI such as kafka://kafka:9092/t")
    return body


def _brokers(sink_uri: str) -> list[str]:
    """The host:port list of a kafka:// sink URI; nothing to wait for otherwise."""
    parts = urlsplit(sink_uri.strip())
    if not parts.scheme.startswith("kafka"):
        return []
    return [b.strip() for b in parts.netloc.split(",") if b.strip()]


def _wait(target: str, deadline: float, ready: Callable[[str], bool]) -> bool:
    while not ready(target):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return bool(answer.status == 200)
    except (OSError, ValueError):
        return False


def _listens(broker: str) -> bool:
    host, _, port = broker.rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=2).close()
    except (OSError, ValueError):
        return False
    return True


def _post(url: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    headers = {"Content-Type": "application/json"}
    token = os.environ.get("TICDC_SIM_TOKEN")
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=120) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as e:
        text = e.read()
        try:
            return e.code, json.loads(text)
        except ValueError:
            return e.code, {"error_msg": text.decode("utf-8", "replace")}


def _fail(status: int, message: str) -> int:
    print(f"create-changefeed: {message}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
