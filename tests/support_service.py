"""`ticdc-sim serve` in a subprocess on free ports, for the end-to-end and browser tests."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pymysql


def _free_ports(count: int) -> list[int]:
    """Distinct free ports: each held until all are found (one at a time, the kernel may
    hand the same one out twice)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for s in sockets:
            s.close()


@dataclass
class Server:
    http: str
    mysql_port: int
    data_dir: Path
    process: subprocess.Popen[bytes]
    log: Path  # what it printed (a file: a pipe nobody reads would block it)
    token: str | None = None

    @classmethod
    def start(cls, data_dir: Path, wrap: Sequence[str] = (), **env: str) -> Server:
        """`env`: settings, as TICDC_SIM_<NAME> variables. HTTP listens on a port the system
        picks (`--port 0`), read back from the banner. `wrap`: a command that runs the
        service's as its arguments (`unshare ... sh -c '...; exec "$@"'`), in its process."""
        (mysql_port,) = _free_ports(1)
        command = [*wrap, sys.executable, "-m", "ticdc_sim", "serve", "--port", "0"]
        command += ["--mysql-port", str(mysql_port), "--data-dir", str(data_dir)]
        settings = {f"TICDC_SIM_{k.upper()}": v for k, v in env.items()}
        data_dir.parent.mkdir(parents=True, exist_ok=True)
        log = data_dir.parent / f"serve-{mysql_port}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                command, env=os.environ | settings, stdout=out, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + 60
        server: Server | None = None
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise AssertionError(f"serve exited: {log.read_text()}")
            if server is None:
                found = re.search(r"playground\s+(http://127\.0\.0\.1:(\d+))/", log.read_text())
                if found is not None:
                    assert found.group(2) != "0", "the banner names the port it listens on"
                    token = env.get("token")
                    server = cls(found.group(1), mysql_port, data_dir, process, log, token)
            else:
                try:
                    if httpx.get(f"{server.http}/readyz").status_code == 200:
                        return server
                except httpx.TransportError:
                    pass
            time.sleep(0.1)
        process.kill()
        raise AssertionError(f"serve was not ready within 60 s: {log.read_text()}")

    def stop(self, sig: signal.Signals = signal.SIGINT, times: int = 1) -> str:
        """Stop it as Ctrl-C does (or `sig`, sent `times`); what it printed."""
        for _ in range(times):
            self.process.send_signal(sig)
            time.sleep(0.2)
        self.process.wait(timeout=60)
        printed = self.log.read_text()
        assert self.process.returncode == 0, printed
        return printed

    def mysql(self, user: str = "root", **options: Any) -> Any:
        return pymysql.connect(
            host="127.0.0.1", port=self.mysql_port, user=user, database="test", **options
        )

    def sql(self, text: str, cluster: str = "default") -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        url = f"{self.http}/sim/v1/clusters/{cluster}/sql"
        response = httpx.post(url, content=text, headers=headers)
        assert response.status_code == 200, response.text
        found: dict[str, Any] = response.json()
        return found

    def inserted(self, table: str, column: str = "id") -> list[Any]:
        """The `column` of each insert into `table` the default changefeed sent, in order."""
        page = httpx.get(
            f"{self.http}/sim/v1/clusters/default/changefeeds/default/messages",
            params={"limit": 10_000},
        ).json()["messages"]
        return [
            d["columns"][column]
            for m in page
            for d in m["decoded"]
            if d["type"] == "insert" and d["table"] == table
        ]


def remain(folder: Path) -> str:
    """What a shutdown says remains of a jsonl changefeed's files in `folder` (no cap hit)."""
    from ticdc_sim.sinks.retention import files_text, size_text

    files = [f for f in folder.rglob("*.jsonl") if f.is_file()]
    size = sum(f.stat().st_size for f in files)
    return f"{size_text(size)} in {files_text(len(files))} remain in {folder}"
