"""Hostile programs against the network. Every address used is on this machine's loopback."""

from __future__ import annotations

import pytest
from sandbox_programs import (
    AbstractUnixListener,
    LoopbackListener,
    Sandbox,
    c,
    observed,
    python,
)

LANGUAGES = ["python", "c"]

PY_CONNECT = """
outcomes = {"interfaces": [name for _, name in socket.if_nameindex()]}
for port in P["ports"]:
    def connect(port=port):
        with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
            conn.sendall(b"PING\\r\\n")
            return conn.recv(100)
    outcomes[str(port)] = attempt(connect)
report(**outcomes)
"""

C_CONNECT = r"""
int main(void) {
    int ports[] = PORTS;
    for (int i = 0; ports[i]; i++) {
        char key[16];
        snprintf(key, sizeof key, "%d", ports[i]);
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in address = {0};
        address.sin_family = AF_INET;
        address.sin_port = htons(ports[i]);
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int ok = fd >= 0 && connect(fd, (struct sockaddr *)&address, sizeof address) == 0;
        if (ok) write(fd, "PING\r\n", 6);
        field_outcome(key, ok);
        if (fd >= 0) close(fd);
    }
    report();
    return 0;
}
"""

REDIS, POSTGRES = 6379, 5432


def _connect(sandbox: Sandbox, language: str, ports: list[int]) -> dict[str, str]:
    if language == "python":
        return observed(sandbox.python(python(PY_CONNECT, ports=ports)))
    array = "{" + ", ".join(str(p) for p in ports) + ", 0}"
    return observed(sandbox.c(c(C_CONNECT.replace("PORTS", array))))


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_loopback_listener_of_the_host_is_unreachable(
    sandbox: Sandbox, listener: LoopbackListener, language: str
) -> None:
    seen = _connect(sandbox, language, [listener.port])
    assert seen[str(listener.port)].startswith("refused")
    assert listener.connections() == 1  # only the fixture's own check from the host


@pytest.mark.parametrize("language", LANGUAGES)
def test_redis_and_postgresql_on_loopback_are_unreachable(sandbox: Sandbox, language: str) -> None:
    seen = _connect(sandbox, language, [REDIS, POSTGRES])
    assert seen[str(REDIS)].startswith("refused")
    assert seen[str(POSTGRES)].startswith("refused")


def test_the_only_interface_is_an_isolated_loopback(sandbox: Sandbox) -> None:
    seen = observed(sandbox.python(python(PY_CONNECT, ports=[])))
    assert seen["interfaces"] == ["lo"]


PY_ABSTRACT = """
def connect():
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect("\\0" + P["name"])
        conn.sendall(b"hello")
report(abstract=attempt(connect))
"""


def test_an_abstract_unix_socket_of_the_host_is_unreachable(
    sandbox: Sandbox, unix_listener: AbstractUnixListener
) -> None:
    seen = observed(sandbox.python(python(PY_ABSTRACT, name=unix_listener.name)))
    assert seen["abstract"].startswith("refused")


PY_OUTBOUND = """
outcomes = {}
def udp():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.sendto(b"x", ("127.0.0.1", P["port"]))
        sock.settimeout(0.5)
        return sock.recvfrom(10)
outcomes["udp"] = attempt(udp)
outcomes["raw"] = attempt(lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW))
outcomes["netlink_route"] = attempt(lambda: socket.if_nameindex())
report(**outcomes)
"""


def test_udp_and_raw_sockets_reach_nothing(sandbox: Sandbox, listener: LoopbackListener) -> None:
    seen = observed(sandbox.python(python(PY_OUTBOUND, port=listener.port)))
    assert seen["udp"].startswith("refused")
    assert seen["raw"].startswith("refused")
