"""A throwaway Redis Cluster of ``redis-server`` processes on free ports of 127.0.0.1.

Used by the cluster tests (a session fixture) and by ``bench/redis_scale.py``:
``LocalCluster.start(directory, masters=3)`` starts the nodes with no persistence,
joins them with ``redis-cli --cluster create`` (no replicas) and waits for
``cluster_state:ok``; ``stop()`` ends every node it started. ``LocalServer`` is the
same for one plain node.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Final

__all__ = ["LocalCluster", "LocalServer", "free_cluster_port", "free_port"]

_STARTUP: Final = 30.0


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _bindable(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_cluster_port() -> int:
    """A free port P of 127.0.0.1 whose cluster bus port P + 10000 is free too
    (so P is at most 55535)."""
    while True:
        port = random.randint(20_000, 55_535)
        if _bindable(port) and _bindable(port + 10_000):
            return port


def _wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + _STARTUP
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"redis-server on port {port} exited at start")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"redis-server on port {port} did not start")


def _server(directory: Path, port: int, *extra: str) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(directory),
            "--daemonize",
            "no",
            "--logfile",
            str(directory / f"redis-{port}.log"),
            *extra,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_port(port, process)
    except RuntimeError as error:
        log = directory / f"redis-{port}.log"
        tail = log.read_text()[-500:] if log.exists() else ""
        raise RuntimeError(f"{error}: {tail}") from None
    return process


class LocalServer:
    """One plain ``redis-server`` on a free port (for a benchmark's own node)."""

    def __init__(self, directory: Path) -> None:
        self.directory: Final = directory
        self.port: Final = free_port()
        self.process = _server(directory, self.port)

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:PORT/0``."""
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        """End the server."""
        _end(self.process)

    def restart(self) -> None:
        """Start the server again on its port (empty: nothing is persisted)."""
        self.process = _server(self.directory, self.port)


class LocalCluster:
    """A cluster of ``masters`` nodes with no replicas; ``ports[i]`` is node i's."""

    def __init__(self, directory: Path, masters: int = 3) -> None:
        self.ports: Final = [free_cluster_port() for _ in range(masters)]
        self.processes: dict[int, subprocess.Popen[bytes]] = {}
        try:
            for port in self.ports:
                self.processes[port] = _server(
                    directory,
                    port,
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    str(directory / f"nodes-{port}.conf"),
                    # A killed node is failed late: the others keep serving their
                    # slots meanwhile (no replica could take over anyway).
                    "--cluster-node-timeout",
                    "60000",
                    "--cluster-require-full-coverage",
                    "no",
                )
            subprocess.run(
                [
                    "redis-cli",
                    "--cluster",
                    "create",
                    *(f"127.0.0.1:{port}" for port in self.ports),
                    "--cluster-replicas",
                    "0",
                    "--cluster-yes",
                ],
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                timeout=_STARTUP,
            )
            self._wait_ok()
        except BaseException:
            self.stop()
            raise

    def _wait_ok(self) -> None:
        deadline = time.monotonic() + _STARTUP
        while time.monotonic() < deadline:
            states = [
                subprocess.run(
                    ["redis-cli", "-p", str(port), "cluster", "info"],
                    capture_output=True,
                    text=True,
                    timeout=5,
                ).stdout
                for port in self.ports
            ]
            if all("cluster_state:ok" in state for state in states):
                return
            time.sleep(0.1)
        raise RuntimeError("the local Redis Cluster did not reach cluster_state:ok")

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:PORT`` of the first node (a startup node)."""
        return f"redis://127.0.0.1:{self.ports[0]}"

    def kill(self, port: int) -> None:
        """Kill node ``port`` with SIGKILL, as a crash would."""
        process = self.processes.pop(port)
        os.kill(process.pid, signal.SIGKILL)
        process.wait()

    def stop(self) -> None:
        """End every node still running."""
        for process in self.processes.values():
            _end(process)
        self.processes.clear()


def _end(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:  # pragma: no cover  # a stuck server
            process.kill()
            process.wait()
