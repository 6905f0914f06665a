"""The one-machine cluster (`lab cluster up|down`): the Kubernetes deployment's parts on one
machine, each its own process. A deployment, not a command: `cli/cluster.py` parses the command
and calls `deployment.up`/`down`.

- `deployment.py`: the parts started in order (`up`'s named steps), their state, `down`;
- `postgres.py`: a private PostgreSQL server (Debian's `initdb` + `pg_ctl`);
- `instance.py`: the instance and workspace, from k8s/base's files (`k8s_base/`, package data);
- here: what they share (the error a part that did not start raises, ports, waiting).
"""

from __future__ import annotations

import socket
import time
from pathlib import Path


class ClusterError(RuntimeError):
    """A part of the cluster did not start (the message names it and its log)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(check, timeout: float, what: str, log: Path | None = None, alive=None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        if alive is not None and not alive():
            break
        time.sleep(0.2)
    tail = ""
    if log is not None and log.is_file():
        tail = "\n" + "\n".join(log.read_text(errors="replace").splitlines()[-20:])
    raise ClusterError(f"{what} did not come up{f' (log: {log})' if log else ''}{tail}")


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0
