"""deploy/kubernetes renders offline, validates against the Kubernetes schemas and KEDA's,
and agrees with the app: the queues it serves and scales on, the variables it sets, the
one beat, the probes, and the commands docs/webapp.md gives."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from cloudcoil.models.keda import v1alpha1 as keda
from kombu.transport.redis import Channel
from kubernetes_validate import validate
from pydantic import BaseModel

from tests.kustomize_render import render
from tests.test_deployment import settings_variables
from webapp.runs.messaging.dispatch import FIRST_SENDING, SENT_AGAIN
from webapp.stack import ALL_QUEUES, REPO_ROOT

KUBERNETES = REPO_ROOT / "deploy" / "kubernetes"
VARIANTS = ("base", "strict")
KUBERNETES_VERSION = "1.32.0"
DOCS = REPO_ROOT / "docs" / "webapp.md"
SECTION = "### Kubernetes"
APP_SECRET = "workbench"
KEDA_SECRET = "workbench-redis"
KEDA_KINDS: dict[str, type[BaseModel]] = {
    "ScaledObject": keda.ScaledObject, "TriggerAuthentication": keda.TriggerAuthentication}


class _Naming:
    """kombu's Redis channel, for its names of a queue's lists alone (no connection)."""

    sep = Channel.sep
    priority_steps = Channel.priority_steps
    priority = Channel.priority
    _q_for_pri = Channel._q_for_pri  # type: ignore[attr-defined]  # noqa: SLF001


def _by_kind_and_name(documents: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(document["kind"], document["metadata"]["name"]): document for document in documents}


@pytest.fixture(scope="module", params=VARIANTS)
def rendered(request) -> dict[tuple[str, str], dict[str, Any]]:
    return _by_kind_and_name(render(KUBERNETES / request.param))


@pytest.fixture(scope="module")
def base() -> dict[tuple[str, str], dict[str, Any]]:
    return _by_kind_and_name(render(KUBERNETES / "base"))


def _containers(document: dict[str, Any]) -> list[dict[str, Any]]:
    containers: list[dict[str, Any]] = document["spec"]["template"]["spec"]["containers"]
    return containers


def _workloads(rendered) -> dict[str, dict[str, Any]]:
    return {name: document for (kind, name), document in rendered.items()
            if kind in ("Deployment", "Job")}


def _queues(document: dict[str, Any]) -> list[str]:
    command = _containers(document)[0].get("command") or []
    if "worker" not in command:
        return []
    return command[command.index("-Q") + 1].split(",")


# -- rendering and schemas ------------------------------------------------------------------
@pytest.mark.parametrize("variant", VARIANTS)
def test_kubectl_renders_what_the_python_renderer_renders(variant: str) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed: the Python renderer alone is checked")
    done = subprocess.run([kubectl, "kustomize", str(KUBERNETES / variant)], capture_output=True,
                          text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    by_kubectl = _by_kind_and_name([doc for doc in yaml.safe_load_all(done.stdout) if doc])
    assert by_kubectl == _by_kind_and_name(render(KUBERNETES / variant))


def test_every_resource_is_valid_for_its_schema(rendered) -> None:
    for (kind, name), document in rendered.items():
        if kind in KEDA_KINDS:
            model = KEDA_KINDS[kind].model_validate(document)
            # The generated models let unknown fields pass: compare what they kept.
            kept = model.model_dump(by_alias=True, exclude_unset=True, mode="json")
            assert kept == document, f"{kind}/{name} has fields KEDA does not know"
        else:
            validate(document, KUBERNETES_VERSION, strict=True)


def test_a_wrong_field_is_caught_by_the_checks(base) -> None:
    # The checks above can fail: a misspelt field in each kind of schema.
    web = yaml.safe_load(yaml.safe_dump(base[("Deployment", "web")]))
    web["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGett"] = {}
    with pytest.raises(Exception, match="httpGett"):
        validate(web, KUBERNETES_VERSION, strict=True)
    scaled = yaml.safe_load(yaml.safe_dump(base[("ScaledObject", "worker-python")]))
    del scaled["spec"]["triggers"]
    with pytest.raises(Exception, match="triggers"):
        keda.ScaledObject.model_validate(scaled)
    scaled = yaml.safe_load(yaml.safe_dump(base[("ScaledObject", "worker-python")]))
    scaled["spec"]["maxReplicas"] = 3
    kept = keda.ScaledObject.model_validate(scaled).model_dump(by_alias=True,
                                                                exclude_unset=True, mode="json")
    assert kept != scaled


# -- what the app needs ---------------------------------------------------------------------
def test_the_workers_serve_every_queue_the_app_uses_once(rendered) -> None:
    served = [queue for document in _workloads(rendered).values() for queue in _queues(document)]
    assert sorted(served) == sorted(ALL_QUEUES)


def test_every_language_queue_scales_on_each_of_its_redis_lists(rendered) -> None:
    """KEDA reads list lengths: each priority the app sends at is a list of its own."""
    used = sorted({FIRST_SENDING, SENT_AGAIN})
    channel_names = {queue: {_Naming()._q_for_pri(queue, priority)  # noqa: SLF001
                             for priority in used}
                     for queue in ALL_QUEUES if queue != "default"}
    scaled = {name: document for (kind, name), document in rendered.items()
              if kind == "ScaledObject"}
    workloads = _workloads(rendered)
    covered: set[str] = set()
    for name, document in scaled.items():
        target = document["spec"]["scaleTargetRef"]["name"]
        queues = _queues(workloads[target])
        lists = {trigger["metadata"]["listName"] for trigger in document["spec"]["triggers"]}
        assert lists == set().union(*(channel_names[queue] for queue in queues)), name
        # Replicas follow the sum over the lists, per pod's concurrency.
        names = {trigger["name"] for trigger in document["spec"]["triggers"]}
        formula = document["spec"]["advanced"]["scalingModifiers"]["formula"]
        assert set(re.findall(r"[a-z_0-9]+", formula)) == names
        command = _containers(workloads[target])[0]["command"]
        concurrency = command[command.index("--concurrency") + 1]
        assert document["spec"]["advanced"]["scalingModifiers"]["target"] == concurrency
        assert document["spec"]["minReplicaCount"] == 0
        assert document["spec"]["maxReplicaCount"] >= 1
        assert "replicas" not in workloads[target]["spec"], "KEDA owns the replica count"
        covered |= set(queues)
    assert covered == set(channel_names), "a language queue without a ScaledObject"


def test_the_default_queue_is_always_served(rendered) -> None:
    (serving,) = [document for document in _workloads(rendered).values()
                  if "default" in _queues(document)]
    assert serving["spec"]["replicas"] >= 1
    assert serving["metadata"]["name"] not in {
        document["spec"]["scaleTargetRef"]["name"]
        for (kind, _), document in rendered.items() if kind == "ScaledObject"}


def test_exactly_one_beat_and_never_two_during_a_rollout(rendered) -> None:
    beats = [document for document in _workloads(rendered).values()
             if "beat" in (_containers(document)[0].get("command") or [])]
    assert len(beats) == 1
    assert beats[0]["spec"]["replicas"] == 1
    assert beats[0]["spec"]["strategy"]["type"] == "Recreate"


def test_the_release_job_migrates_then_imports_humaneval(rendered) -> None:
    job = rendered[("Job", "release")]
    (command,) = [_containers(job)[0]["command"]]
    assert command[:2] == ["sh", "-c"]
    assert command[2] == ("python manage.py migrate --no-input && "
                          "python manage.py import_dataset package:humaneval")


def test_only_the_program_running_workers_are_privileged(rendered) -> None:
    for name, document in _workloads(rendered).items():
        privileged = any((container.get("securityContext") or {}).get("privileged")
                         for container in _containers(document))
        runs_programs = any(queue.startswith("eval-") for queue in _queues(document))
        assert privileged == runs_programs, name


def test_every_variable_set_is_one_the_app_reads(rendered) -> None:
    reads = settings_variables()
    config = rendered[("ConfigMap", "workbench")]["data"]
    assert set(config) <= reads, set(config) - reads
    for name, document in _workloads(rendered).items():
        for container in _containers(document):
            explicit = {variable["name"] for variable in container.get("env", [])}
            assert explicit <= reads, (name, explicit - reads)
            sources = {(source.get("configMapRef") or source.get("secretRef"))["name"]
                       for source in container.get("envFrom", [])}
            assert sources == {"workbench"}, name


def test_requests_limits_probes_and_budgets(rendered) -> None:
    for name, document in _workloads(rendered).items():
        for container in _containers(document):
            resources = container["resources"]
            assert resources["requests"]["cpu"], name
            assert resources["requests"]["memory"], name
            assert resources["limits"]["memory"], name
        if document["kind"] == "Deployment" and name != "beat":
            assert ("PodDisruptionBudget", name) in rendered, name
    web = _containers(rendered[("Deployment", "web")])[0]
    assert web["readinessProbe"]["httpGet"]["path"] == "/healthz"
    assert "livenessProbe" in web
    for name in ("worker-python", "worker-compiled", "worker-default"):
        assert "livenessProbe" in _containers(rendered[("Deployment", name)])[0], name


def test_the_strict_variant_runs_the_program_workers_in_gvisor() -> None:
    strict = _by_kind_and_name(render(KUBERNETES / "strict"))
    assert strict[("RuntimeClass", "gvisor")]["handler"] == "runsc"
    for name, document in _workloads(strict).items():
        runtime = document["spec"]["template"]["spec"].get("runtimeClassName")
        runs_programs = any(queue.startswith("eval-") for queue in _queues(document))
        assert runtime == ("gvisor" if runs_programs else None), name


def test_postgres_and_redis_are_external_services(rendered) -> None:
    for name, port in (("postgres", 5432), ("redis", 6379)):
        service = rendered[("Service", name)]
        assert service["spec"]["type"] == "ExternalName"
        assert service["spec"]["ports"][0]["port"] == port


# -- the docs --------------------------------------------------------------------------------
def _section() -> str:
    text = DOCS.read_text()
    start = text.index(SECTION)
    after = re.search(r"^#{1,3} ", text[start + len(SECTION):], re.MULTILINE)
    return text[start:] if after is None else text[start:start + len(SECTION) + after.start()]


def _commands() -> list[list[str]]:
    blocks = re.findall(r"```sh\n(.*?)```", _section(), re.DOTALL)
    logical = [line for block in blocks for line in block.replace("\\\n", " ").splitlines()]
    return [shlex.split(line) for line in logical if line.strip() and not line.startswith("#")]


def test_the_docs_render_and_apply_the_manifests_that_exist() -> None:
    commands = _commands()
    paths = [word for command in commands if command[:1] == ["kubectl"]
             for word in command if word.startswith("deploy/kubernetes")]
    assert paths, "the Kubernetes section gives no kubectl command with the manifests"
    for path in paths:
        assert (REPO_ROOT / path / "kustomization.yaml").exists(), path


def test_the_docs_create_the_secrets_the_manifests_read(rendered) -> None:
    created: dict[str, set[str]] = {}
    for command in _commands():
        if command[:1] == ["kubectl"] and "secret" in command and "generic" in command:
            assert command[1:3] == ["-n", "workbench"], command
            name = command[command.index("generic") + 1]
            created[name] = {word.split("=", 1)[1].split("=", 1)[0] for word in command
                             if word.startswith("--from-literal=")}
    assert set(created) == {APP_SECRET, KEDA_SECRET}
    assert created[APP_SECRET] <= settings_variables()
    assert {"DATABASE_URL", "REDIS_URL", "DJANGO_SECRET_KEY"} <= created[APP_SECRET]
    referenced = {ref["key"] for ref in rendered[("TriggerAuthentication", "redis")]["spec"]
                  ["secretTargetRef"] if ref["name"] == KEDA_SECRET}
    assert referenced <= created[KEDA_SECRET]


def test_the_docs_name_every_variable_of_the_config_map(rendered) -> None:
    section = _section()
    for name in rendered[("ConfigMap", "workbench")]["data"]:
        assert f"`{name}`" in DOCS.read_text(), name
    assert "queued chunks" in section or "chunks waiting" in section


def test_the_renderer_refuses_what_it_does_not_know(tmp_path: Path) -> None:
    (tmp_path / "kustomization.yaml").write_text("resources: []\nconfigMapGenerator: []\n")
    with pytest.raises(ValueError, match="configMapGenerator"):
        render(tmp_path)
