"""A private MariaDB server for the oracle tests: own datadir, loopback port, torn down after.

`MariaDB.start()` returns None and a reason when the server binary is missing (the test
command installs it where it can: scripts/ensure-mariadb).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import pymysql

SERVER_OPTIONS = (
    "--character-set-server=utf8mb4",
    "--collation-server=utf8mb4_bin",  # TiDB's default collation
    "--default-time-zone=+00:00",
    "--sql-mode=STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,"
    "ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION",
    "--skip-log-bin",
    "--innodb-buffer-pool-size=32M",
    "--innodb-log-file-size=8M",
    "--skip-name-resolve",
)
SYSTEM_SCHEMAS = {"mysql", "information_schema", "performance_schema", "sys"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _binary(name: str) -> str | None:
    return shutil.which(name) or next(
        (str(p) for p in (Path("/usr/sbin") / name, Path("/usr/bin") / name) if p.exists()),
        None,
    )


class MariaDB:
    def __init__(self, root: Path, process: subprocess.Popen[bytes], port: int) -> None:
        self.root, self.process, self.port = root, process, port

    @classmethod
    def start(cls, *options: str) -> tuple[MariaDB | None, str]:
        """A fresh server with SERVER_OPTIONS, then `options` (the bench's settings)."""
        server, installer = _binary("mariadbd"), _binary("mariadb-install-db")
        if server is None or installer is None:
            return None, "MariaDB is not installed (scripts/ensure-mariadb needs root and apt)"
        root = Path(tempfile.mkdtemp(prefix="ticdc-sim-mariadb-"))
        datadir = root / "data"
        setup = subprocess.run(
            [
                installer,
                "--no-defaults",
                f"--datadir={datadir}",
                "--user=root",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
            ],
            capture_output=True,
        )
        if setup.returncode != 0:
            return None, f"mariadb-install-db failed: {setup.stderr.decode()[-500:]}"
        port = _free_port()
        process = subprocess.Popen(
            [
                server,
                "--no-defaults",
                f"--datadir={datadir}",
                f"--socket={root / 'sock'}",
                f"--port={port}",
                "--bind-address=127.0.0.1",
                "--user=root",
                f"--pid-file={root / 'pid'}",
                f"--log-error={root / 'error.log'}",
                *SERVER_OPTIONS,
                *options,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        server_obj = cls(root, process, port)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if process.poll() is not None:
                log = (root / "error.log").read_text(errors="replace")[-800:]
                return None, f"mariadbd exited: {log}"
            if server_obj.accepting():
                return server_obj, ""
            time.sleep(0.1)
        server_obj.stop()
        return None, "mariadbd did not accept connections within 60 s"

    def accepting(self) -> bool:
        probe = socket.socket(socket.AF_UNIX)
        try:
            probe.connect(str(self.root / "sock"))
            return True
        except OSError:
            return False
        finally:
            probe.close()

    def connect(self) -> Any:
        return pymysql.connect(
            unix_socket=str(self.root / "sock"),
            user="root",
            autocommit=True,
            charset="utf8mb4",
            collation="utf8mb4_bin",
            init_command="SET time_zone = '+00:00'",
            # rowcount counts matched rows: replaying an update whose images are equal (TiKV
            # keeps a Put of an unchanged row, and TiCDC emits it) changes no row but matches
            client_flag=pymysql.constants.CLIENT.FOUND_ROWS,
        )

    def reset(self, conn: Any) -> None:
        """Drop every user database and recreate TiDB's default `test`."""
        with conn.cursor() as cur:
            cur.execute("SHOW DATABASES")
            for (name,) in cur.fetchall():
                if name.lower() not in SYSTEM_SCHEMAS:
                    cur.execute(f"DROP DATABASE `{name}`")
            cur.execute("CREATE DATABASE test")
            cur.execute("USE test")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
        shutil.rmtree(self.root, ignore_errors=True)
