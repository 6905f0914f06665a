"""Timing and memory of one command: wall seconds and the peak RSS of its whole process tree
(`lab sweep run` spawns one worker per core; their memory counts too). Reads Linux's /proc,
like the reference machine; no extra dependency."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

POLL_SECONDS = 0.2
PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass
class Measured:
    seconds: float
    peak_rss_gib: float  # the whole process tree
    stdout: str
    peak_root_gib: float = 0.0  # the command's own process (the orchestrating one)


def tree_rss(root: int) -> tuple[int, int]:
    """Resident bytes of `root` alone, and of `root` and all its descendants."""
    parent, rss = {}, {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            rss[int(d.name)] = int((d / "statm").read_text().split()[1]) * PAGE
        except (OSError, ValueError, IndexError):  # a process that just exited
            continue
        parent[int(d.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    tree, frontier = {root}, [root]
    while frontier:
        children = [p for p, pp in parent.items() if pp in frontier and p not in tree]
        tree.update(children)
        frontier = children
    return rss.get(root, 0), sum(rss.get(p, 0) for p in tree)


def run(cmd: list[str], env: dict, cwd: Path, timeout: float = 1800) -> Measured:
    """Run `cmd` to completion (raising on a non-zero exit), sampling the tree's memory."""
    # Output goes to files, not pipes: a command that prints more than a pipe holds (`lab sweep
    # plan --json` of 1,000 cells) would block while nobody reads until it exits.
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=err, text=True)
        peak = peak_root = 0
        while proc.poll() is None:
            own, total = tree_rss(proc.pid)
            peak, peak_root = max(peak, total), max(peak_root, own)
            if time.perf_counter() - start > timeout:
                proc.kill()
                raise TimeoutError(f"{' '.join(cmd)}: over {timeout:.0f} s")
            try:  # returns as soon as it exits: a sleep would round every wall time up to the next sample
                proc.wait(timeout=POLL_SECONDS)
            except subprocess.TimeoutExpired:
                pass
        seconds = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{err.read()[-3000:]}")
        return Measured(seconds, peak / 2**30, out.read(), peak_root / 2**30)
