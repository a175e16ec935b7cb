"""compose.yaml, the Dockerfile and docs/webapp.md agree with each other and with the app.

Docker cannot run here, so these checks read the files: every app service runs a command
the docs give, the workers serve every queue, compose sets only variables the app reads
and the docs explain, and the image installs what CI installs for toolchains and sandboxes.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

import pytest
import yaml

from webapp.stack import ALL_QUEUES, REPO_ROOT

COMPOSE = REPO_ROOT / "compose.yaml"
DOCKERFILE = REPO_ROOT / "Dockerfile"
DOCS = REPO_ROOT / "docs" / "webapp.md"
SETTINGS = REPO_ROOT / "webapp" / "settings.py"
CI_SCRIPT = REPO_ROOT / ".ci" / "run"

COMPOSE_SECTION = "### Docker Compose"
APP_PROGRAMS = frozenset({"python", "uvicorn", "daphne", "celery"})
# Options whose value is sized to the machine: a documented `--concurrency 8` documents
# `--concurrency 4` too.
SIZING_OPTIONS = frozenset({"--concurrency"})
# CI installs these for the browser tests and the services tests; in production they are a
# browser and separate services, not part of the app image.
NOT_IN_IMAGE = frozenset({"chromium", "chromium-driver", "postgresql", "redis-server"})
# `docker compose` options that take a value, so the word after them is not a service.
COMPOSE_VALUE_OPTIONS = frozenset({
    "-f", "--file", "-p", "--project-name", "--env-file", "--profile", "--scale", "-e",
    "--env", "-u", "--user", "-w", "--workdir", "-n", "--tail", "--timeout", "--index",
    "--entrypoint", "--name", "--since", "--until", "--wait-timeout", "--pull",
})
# The `docker compose` commands whose first word is a service and the rest its command.
COMPOSE_ONE_SERVICE = frozenset({"exec", "run"})

_VARIABLE = re.compile(
    r"\$\$|\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}"
    r"|\$(?P<bare>[A-Za-z_][A-Za-z0-9_]*)"
)


# -- reading the files ----------------------------------------------------------------------
def interpolate(text: str) -> str:
    """What Compose makes of `text` with no variable set: defaults, `$$` as `$`."""

    def value(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        if match.group("op") in (":-", "-"):
            return match.group("arg")
        if match.group("op") in (":?", "?"):
            return f"<required {match.group('name')}>"
        return ""

    return _VARIABLE.sub(value, text)


def compose_variables(text: str) -> set[str]:
    return {m.group("name") or m.group("bare") for m in _VARIABLE.finditer(text)
            if m.group(0) != "$$"}


def load_compose(text: str) -> dict[str, Any]:
    data = yaml.safe_load(text)
    assert isinstance(data, dict), "compose.yaml is not a mapping"
    return data


def dockerfile_cmd() -> list[str]:
    logical = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    found = re.search(r"^CMD\s+(\[.*\])\s*$", logical, re.MULTILINE)
    assert found, "the Dockerfile has no CMD in exec (JSON) form"
    command: list[str] = json.loads(found.group(1))
    return command


def dockerfile_apt_packages() -> set[str]:
    logical = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    packages: set[str] = set()
    for found in re.finditer(r"apt-get install([^&\n]*)", logical):
        packages |= {word for word in shlex.split(found.group(1)) if not word.startswith("-")}
    return packages


def ci_apt_packages() -> set[str]:
    lines = [line.split("#", 1)[0] for line in CI_SCRIPT.read_text().splitlines()]
    packages: set[str] = set()
    for found in re.finditer(r"\bpackages\+?=\(([^)]*)\)", "\n".join(lines)):
        packages |= set(found.group(1).split())
    return packages


def settings_variables() -> set[str]:
    """Every variable webapp/settings.py reads, through the env helpers or os.environ."""
    source = SETTINGS.read_text()
    helpers = re.findall(r"\benv_[a-z_]+\(\s*\"([A-Z][A-Z0-9_]*)\"", source)
    direct = re.findall(
        r"os\.(?:environ(?:\.get)?\s*[\[(]|getenv\()\s*\"([A-Z][A-Z0-9_]*)\"", source)
    return set(helpers) | set(direct)


def docs_sections(text: str) -> tuple[str, str]:
    """(docs/webapp.md without its Docker Compose section, that section)."""
    start = text.index(COMPOSE_SECTION)
    after = re.search(r"^#{1,3} ", text[start + len(COMPOSE_SECTION):], re.MULTILINE)
    end = len(text) if after is None else start + len(COMPOSE_SECTION) + after.start()
    return text[:start] + text[end:], text[start:end]


def documented_app_variables(docs: str) -> set[str]:
    """The first column of the variable tables, outside the Docker Compose section."""
    outside, _ = docs_sections(docs)
    names: set[str] = set()
    for row in re.findall(r"^\|([^|\n]*)\|", outside, re.MULTILINE):
        names |= set(re.findall(r"`([A-Z][A-Z0-9_]*)`", row))
    return names


def shell_lines(docs: str) -> list[list[str]]:
    """Each command line of the shell blocks, as words (continuations joined)."""
    lines: list[list[str]] = []
    for language, body in re.findall(r"^```(\w*)\n(.*?)^```", docs, re.MULTILINE | re.DOTALL):
        if language not in ("", "sh", "bash", "shell", "console"):
            continue
        for line in re.sub(r"\\\n", " ", body).splitlines():
            words = shlex.split(line, comments=True)
            if words:
                lines.append(words)
    return lines


def split_commands(words: list[str]) -> list[list[str]]:
    commands: list[list[str]] = [[]]
    for word in words:
        if word in ("&&", ";", "||", "|"):
            commands.append([])
        else:
            commands[-1].append(word)
    return [command for command in commands if command]


def documented_commands(docs: str) -> list[list[str]]:
    """The app commands in the shell blocks, from the program on (`docker run ... workbench
    celery ...` documents `celery ...`)."""
    found = []
    for words in shell_lines(docs):
        for command in split_commands(words):
            starts = [i for i, word in enumerate(command) if word in APP_PROGRAMS]
            if starts:
                found.append(command[starts[0]:])
    return found


def normalized(command: list[str]) -> tuple[str, ...]:
    words: list[str] = []
    sized = False
    for word in command:
        option, equals, _ = word.partition("=")
        if sized:
            words.append("<sized>")
            sized = False
        elif option in SIZING_OPTIONS:
            words.append(f"{option}=<sized>" if equals else option)
            sized = not equals
        else:
            words.append(word)
    return tuple(words)


def service_commands(service: dict[str, Any], image_cmd: list[str]) -> list[list[str]]:
    """The commands a service runs: the image's CMD unless it says otherwise; `sh -c` is
    split at its `&&`."""
    command = service.get("command")
    if command is None:
        argv = list(image_cmd)
    elif isinstance(command, str):
        argv = shlex.split(interpolate(command))
    else:
        argv = [interpolate(str(word)) for word in command]
    if argv[:2] in (["sh", "-c"], ["bash", "-c"]):
        return split_commands(shlex.split(argv[2]))
    return [argv]


def environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.partition("=")[::2] for item in env)
    return {str(key): "" if value is None else str(value) for key, value in env.items()}


def depends_on(service: dict[str, Any]) -> dict[str, str]:
    """Dependency -> condition (the short list form means `service_started`)."""
    deps = service.get("depends_on") or {}
    if isinstance(deps, list):
        return {name: "service_started" for name in deps}
    return {name: (spec or {}).get("condition", "service_started") for name, spec in deps.items()}


def named_volumes(service: dict[str, Any]) -> dict[str, str]:
    """Named volume -> mount point (bind mounts, which start with . or /, left out)."""
    mounts = {}
    for volume in service.get("volumes") or []:
        if isinstance(volume, str):
            source, _, rest = volume.partition(":")
            target = rest.split(":")[0]
        else:
            source, target = volume.get("source", ""), volume.get("target", "")
        if source and not source.startswith((".", "/", "~", "$")):
            mounts[source] = target
    return mounts


def celery_role(commands: list[list[str]]) -> str | None:
    """`worker` or `beat` for a Celery command (`celery -A webapp worker ...`)."""
    for command in commands:
        if command[:1] == ["celery"]:
            return next((word for word in command if word in ("worker", "beat")), None)
    return None


def worker_queues(command: list[str]) -> set[str]:
    queues: set[str] = set()
    for i, word in enumerate(command):
        if word in ("-Q", "--queues") and i + 1 < len(command):
            queues |= set(command[i + 1].split(","))
        elif word.startswith("--queues="):
            queues |= set(word.split("=", 1)[1].split(","))
    return queues


# -- fixtures -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return load_compose(COMPOSE.read_text())


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = compose["services"]
    return found


@pytest.fixture(scope="module")
def built(services: dict[str, dict[str, Any]]) -> tuple[str, str]:
    """(the service that builds the app image, that image's name)."""
    builders = [name for name, service in services.items() if "build" in service]
    assert len(builders) == 1, f"the image must be built by one service, not {builders}"
    image = services[builders[0]].get("image")
    assert image, f"{builders[0]} builds the image without naming it (image:)"
    return builders[0], image


@pytest.fixture(scope="module")
def app_services(services: dict[str, dict[str, Any]],
                 built: tuple[str, str]) -> dict[str, dict[str, Any]]:
    return {name: service for name, service in services.items()
            if service.get("image") == built[1]}


@pytest.fixture(scope="module")
def commands(app_services: dict[str, dict[str, Any]]) -> dict[str, list[list[str]]]:
    cmd = dockerfile_cmd()
    return {name: service_commands(service, cmd) for name, service in app_services.items()}


@pytest.fixture(scope="module")
def release(commands: dict[str, list[list[str]]]) -> str:
    """The one-shot service that migrates."""
    migrating = [name for name, service_commands in commands.items()
                 if any(command[:3] == ["python", "manage.py", "migrate"]
                        for command in service_commands)]
    assert len(migrating) == 1, f"exactly one service must migrate, found {migrating}"
    return migrating[0]


@pytest.fixture(scope="module")
def docs() -> str:
    return DOCS.read_text()


# -- the image ------------------------------------------------------------------------------
def test_the_image_is_built_once_from_the_dockerfile(services, built, app_services):
    builder, image = built
    build = services[builder]["build"]
    context = build if isinstance(build, str) else build.get("context", ".")
    assert context in (".", "./"), f"{builder} builds from {context!r}, not the repository"
    assert isinstance(build, str) or build.get("dockerfile", "Dockerfile") == "Dockerfile"
    assert {"web", "migrate", "beat"} <= app_services.keys(), \
        f"the app services must all run the image {image!r}"
    for name, service in services.items():
        assert name in app_services or str(service.get("image", "")).split(":")[0] in (
            "postgres", "redis"), f"{name} runs neither the app image nor PostgreSQL/Redis"


def test_every_app_service_depends_on_the_builder(services, built, app_services):
    # `docker compose up -d web` must build the image too: only the services named and
    # their dependencies are built.
    builder = built[0]

    def reaches(name: str, seen: frozenset[str] = frozenset()) -> bool:
        deps = depends_on(services[name])
        return builder in deps or any(
            reaches(dep, seen | {name}) for dep in deps if dep not in seen and dep in services)

    for name in app_services.keys() - {builder}:
        assert reaches(name), f"{name} does not depend on {builder}, which builds its image"


# -- commands against the docs ------------------------------------------------------------------
def test_every_app_service_runs_a_documented_command(commands, docs):
    documented = {normalized(command) for command in documented_commands(docs)}
    assert documented, "no app command found in docs/webapp.md's shell blocks"
    undocumented = [
        f"{name}: {shlex.join(command)}"
        for name, service_commands in commands.items()
        for command in service_commands
        if normalized(command) not in documented
    ]
    assert not undocumented, "commands that docs/webapp.md does not give:\n" + "\n".join(
        undocumented)


def test_web_runs_the_image_command_on_its_published_port(services, commands):
    cmd = dockerfile_cmd()
    assert commands["web"] == [cmd], "web must run the Dockerfile's CMD"
    port = cmd[cmd.index("--port") + 1]
    published = [str(mapping) for mapping in services["web"].get("ports", [])]
    assert any(mapping.rsplit(":", 1)[-1] == port for mapping in published), \
        f"web does not publish the CMD's port {port}: {published}"
    assert all("${" in mapping.rsplit(":", 1)[0] for mapping in published), \
        f"web's host port is not a variable: {published}"


def test_the_release_step_migrates_then_imports_humaneval(commands, release):
    steps = [command[:3] for command in commands[release]]
    assert steps == [["python", "manage.py", "migrate"],
                     ["python", "manage.py", "import_dataset"]], steps
    assert "--no-input" in commands[release][0], "migrate would wait for an answer"
    assert commands[release][1][3:] == ["package:humaneval"]


def test_the_workers_serve_every_queue_the_app_uses(commands):
    queues: set[str] = set()
    for service_commands in commands.values():
        if celery_role(service_commands) == "worker":
            for command in service_commands:
                queues |= worker_queues(command)
    missing = set(ALL_QUEUES) - queues
    assert not missing, f"no worker serves {sorted(missing)}: its tasks would wait forever"
    unknown = queues - set(ALL_QUEUES)
    assert not unknown, f"workers serve queues the app never uses: {sorted(unknown)}"


def test_only_the_workers_are_privileged(app_services, commands):
    # The sandboxes (runsc, bubblewrap, cgroups) need it; nothing else runs generated code.
    for name, service in app_services.items():
        is_worker = celery_role(commands[name]) == "worker"
        assert bool(service.get("privileged")) is is_worker, \
            f"{name}: privileged must be {is_worker}"


def test_exactly_one_beat(services, commands):
    beats = [name for name, service_commands in commands.items()
             if celery_role(service_commands) == "beat"]
    assert len(beats) == 1, f"exactly one beat must run, found {beats}"
    beat = services[beats[0]]
    replicas = (beat.get("deploy") or {}).get("replicas", 1)
    assert beat.get("scale", 1) == 1, "the beat service must not scale"
    assert replicas == 1, "the beat service must not scale"


# -- variables ----------------------------------------------------------------------------------
def test_compose_sets_only_variables_the_app_reads_and_the_docs_explain(app_services, docs):
    read = settings_variables()
    documented = documented_app_variables(docs)
    assert {"DATABASE_URL", "REDIS_URL", "DJANGO_SECRET_KEY"} <= read & documented
    for name, service in app_services.items():
        env = environment(service)
        assert {"DATABASE_URL", "REDIS_URL", "DJANGO_SECRET_KEY"} <= env.keys(), name
        unread = env.keys() - read
        assert not unread, f"{name} sets {sorted(unread)}, which webapp/settings.py never reads"
        undocumented = env.keys() - documented
        assert not undocumented, \
            f"{name} sets {sorted(undocumented)}, which docs/webapp.md's table does not explain"


def test_the_app_services_share_one_environment(app_services):
    environments = {name: environment(service) for name, service in app_services.items()}
    first = next(iter(environments.values()))
    for name, env in environments.items():
        assert env == first, f"{name} has an environment of its own; use the x- block"


def test_the_secret_key_has_no_default(app_services):
    for name, service in app_services.items():
        value = environment(service)["DJANGO_SECRET_KEY"]
        assert re.fullmatch(r"\$\{DJANGO_SECRET_KEY:\?[^}]+\}", value), \
            f"{name}: DJANGO_SECRET_KEY must be required (${{DJANGO_SECRET_KEY:?...}}), " \
            f"not {value!r}"


def test_every_compose_variable_is_documented(docs):
    _, section = docs_sections(docs)
    explained = documented_app_variables(docs) | set(re.findall(r"`([A-Z][A-Z0-9_]*)", section))
    unexplained = compose_variables(COMPOSE.read_text()) - explained
    assert not unexplained, f"compose.yaml reads {sorted(unexplained)}, which the docs do not " \
                            f"explain (in the {COMPOSE_SECTION!r} section or the table)"


def test_the_database_url_matches_the_postgres_service(services, app_services):
    postgres_env = environment(services["postgres"])
    url = interpolate(environment(next(iter(app_services.values())))["DATABASE_URL"])
    expected = "postgres://{}:{}@postgres:5432/{}".format(*(
        interpolate(postgres_env[key])
        for key in ("POSTGRES_USER", "POSTGRES_PASSWORD", "POSTGRES_DB")))
    assert url == expected
    assert interpolate(environment(next(iter(app_services.values())))["REDIS_URL"]) \
        .startswith("redis://redis:6379/")


# -- PostgreSQL and Redis -----------------------------------------------------------------------
def test_redis_persists_its_queue_to_a_volume(compose, services):
    redis = services["redis"]
    command = redis.get("command")
    words = shlex.split(command) if isinstance(command, str) else [str(w) for w in command or []]
    joined = " ".join(words)
    assert "--appendonly yes" in joined, "Redis without its append-only file loses the queue"
    assert "--appendfsync everysec" in joined
    assert "/data" in named_volumes(redis).values(), "Redis's /data is not a named volume"


def test_postgres_keeps_its_data_in_a_volume(services):
    assert "/var/lib/postgresql/data" in named_volumes(services["postgres"]).values()


@pytest.mark.parametrize(("name", "probe"), [("postgres", "pg_isready"),
                                              ("redis", "redis-cli ping")])
def test_the_servers_have_healthchecks(services, name, probe):
    check = services[name].get("healthcheck") or {}
    assert not check.get("disable"), f"{name}'s healthcheck is disabled"
    test = check.get("test")
    joined = test if isinstance(test, str) else " ".join(test or [])
    assert probe in joined, f"{name}'s healthcheck does not run {probe}"


def test_the_app_waits_for_the_release_and_healthy_servers(services, release, app_services):
    assert depends_on(services[release]).get("postgres") == "service_healthy"
    for name in app_services.keys() - {release}:
        deps = depends_on(app_services[name])
        assert deps.get(release) == "service_completed_successfully", \
            f"{name} may start before {release} has finished"
        for server in ("postgres", "redis"):
            assert deps.get(server) == "service_healthy", f"{name} may start before {server}"


def test_long_running_services_restart_and_the_release_does_not(services, release):
    for name, service in services.items():
        if name == release:
            assert service.get("restart", "no") == "no", "a one-shot release must not restart"
        else:
            assert service.get("restart") == "unless-stopped", f"{name} does not restart"


def test_volumes_and_dependencies_are_declared(compose, services):
    declared = set(compose.get("volumes") or {})
    for name, service in services.items():
        undeclared = named_volumes(service).keys() - declared
        assert not undeclared, f"{name} mounts undeclared volumes {sorted(undeclared)}"
        unknown = depends_on(service).keys() - services.keys()
        assert not unknown, f"{name} depends on unknown services {sorted(unknown)}"


# -- the docs' compose commands -------------------------------------------------------------
def test_the_docs_compose_commands_name_real_services(services, docs):
    _, section = docs_sections(docs)
    checked = 0
    for words in shell_lines(section):
        for command in split_commands(words):
            if command[:2] != ["docker", "compose"]:
                continue
            checked += 1
            rest = command[2:]
            while rest and rest[0].startswith("-"):  # global options
                rest = rest[2:] if rest[0] in COMPOSE_VALUE_OPTIONS else rest[1:]
            subcommand, args = rest[0], rest[1:]
            named: list[str] = []
            i = 0
            while i < len(args):
                word = args[i]
                if word == "--scale":
                    named.append(args[i + 1].split("=")[0])
                    i += 2
                elif word.startswith("--scale="):
                    named.append(word.split("=")[1])
                    i += 1
                elif word.startswith("-"):
                    i += 2 if word in COMPOSE_VALUE_OPTIONS else 1
                else:
                    named.extend(args[i:i + 1] if subcommand in COMPOSE_ONE_SERVICE else args[i:])
                    break
            unknown = set(named) - services.keys()
            assert not unknown, f"`{shlex.join(command)}` names no service: {sorted(unknown)}"
    assert checked, f"the {COMPOSE_SECTION!r} section shows no docker compose command"


def test_the_docs_start_compose_with_the_secret_key_in_dotenv(docs):
    _, section = docs_sections(docs)
    lines = [" ".join(words) for words in shell_lines(section)]
    assert any("DJANGO_SECRET_KEY=" in line and ".env" in line for line in lines)
    assert "docker compose up -d" in lines
    assert any(line.startswith("docker compose up -d --scale worker-") for line in lines)


# -- the Dockerfile against CI ------------------------------------------------------------------
def test_the_image_installs_what_ci_installs_for_toolchains_and_sandboxes():
    ci = ci_apt_packages()
    assert {"runsc", "bubblewrap", "g++"} <= ci, "could not read .ci/run's package list"
    missing = ci - NOT_IN_IMAGE - dockerfile_apt_packages()
    assert not missing, f"CI installs {sorted(missing)} but the Dockerfile does not"


def test_runsc_alone_comes_from_trixie_pinned_in_the_image_and_in_ci():
    apt = REPO_ROOT / "deploy" / "apt"
    pref = (apt / "trixie-runsc.pref").read_text()
    assert "Package: *\nPin: release n=trixie\nPin-Priority: -1\n" in pref
    pinned = re.search(r"Package: runsc\nPin: version (\S+)-\*\nPin-Priority: 990\n", pref)
    assert pinned, "the pin does not name one runsc version"
    version = pinned.group(1)
    assert "Suites: trixie" in (apt / "trixie-runsc.sources").read_text()
    dockerfile, ci = DOCKERFILE.read_text(), CI_SCRIPT.read_text()
    for name in ("trixie-runsc.sources", "trixie-runsc.pref"):
        assert f"deploy/apt/{name}" in dockerfile, name
        assert f"deploy/apt/{name}" in ci, name
    # The source and the pin are in place before the packages are installed.
    assert dockerfile.index("deploy/apt/") < dockerfile.index("apt-get install")
    assert ci.index("deploy/apt/") < ci.index("apt-get install")
    # CI replaces any other runsc with exactly this one.
    checked = re.search(r"grep -q '\^([^']+)'", ci)
    assert checked, "CI does not check the installed runsc's version"
    assert re.match(checked.group(1), f"{version}-4+b7"), checked.group(1)
    assert not re.match(checked.group(1), "0.0~20221219.0-2+b3"), "bookworm's would pass"
    readme = (REPO_ROOT / "README.md").read_text()
    assert version in readme


def test_the_parsers_see_what_they_should():
    # The checks above pass trivially if a parser finds nothing: pin what they must find.
    assert interpolate("${A:-4} ${B:?set B} $${C} ${D}") == "4 <required B> ${C} "
    assert compose_variables("${A:-x} $${B} $C") == {"A", "C"}
    assert normalized(["celery", "worker", "--concurrency", "8"]) == normalized(
        ["celery", "worker", "--concurrency", "4"])
    assert normalized(["celery", "-Q", "a"]) != normalized(["celery", "-Q", "b"])
    assert {"DATABASE_URL", "EVALUATOR_SANDBOX"} <= settings_variables()
    assert "python3" in dockerfile_apt_packages()
    assert dockerfile_cmd()[0] == "uvicorn"
