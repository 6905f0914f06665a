"""A private PostgreSQL server for the one-machine cluster and the cluster tests: Debian's server
(`apt-get install postgresql`, done here when root), its own data folder, port and socket folder."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from lab_assets.cluster import ClusterError, port_open

DB_USER = "dagster"


def postgres_bindir() -> Path | None:
    """Debian's server binaries (`apt-get install postgresql`), newest version first."""
    for candidate in sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: p.parent.name, reverse=True):
        if (candidate / "initdb").is_file():
            return candidate
    found = shutil.which("initdb")
    return Path(found).parent if found else None


def install_postgres() -> Path:
    """Debian's postgresql package (needs root), for the test fixture and `lab cluster up`."""
    if postgres_bindir() is None:
        if os.geteuid() != 0:
            raise ClusterError("PostgreSQL is not installed: run `apt-get install -y postgresql` (as root)")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", "postgresql"], check=True, env=env)
    bindir = postgres_bindir()
    if bindir is None:
        raise ClusterError("PostgreSQL's initdb was not found after installing the postgresql package")
    return bindir


@dataclass
class Postgres:
    """A private PostgreSQL server: its own data folder, port and socket folder, password auth
    for the user `dagster`. As root, the server runs as the `postgres` user (initdb refuses
    root), in a folder that user can reach."""

    folder: str
    port: int
    password: str = field(repr=False, default="")
    fast: bool = False  # fsync off: for tests and the throwaway cluster (a crash may lose the database)

    @property
    def data(self) -> Path:
        return Path(self.folder) / "data"

    @property
    def log(self) -> Path:
        return Path(self.folder) / "postgres.log"

    def _user(self) -> dict:
        return {"user": "postgres", "group": "postgres", "extra_groups": []} if os.geteuid() == 0 else {}

    def _run(self, *argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(argv, capture_output=True, text=True, **self._user())

    def init(self) -> None:
        bindir = install_postgres()
        Path(self.folder).mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
        os.chmod(self.folder, 0o700)
        if (self.data / "PG_VERSION").is_file():
            return
        fd, pwfile = tempfile.mkstemp(dir=self.folder)
        with os.fdopen(fd, "w") as f:
            f.write(self.password)
        if os.geteuid() == 0:
            shutil.chown(pwfile, "postgres", "postgres")
        try:
            out = self._run(
                str(bindir / "initdb"),
                "-D",
                str(self.data),
                "-U",
                DB_USER,
                f"--pwfile={pwfile}",
                "--auth=scram-sha-256",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
            )
        finally:
            os.unlink(pwfile)
        if out.returncode:
            raise ClusterError(f"initdb failed in {self.data}:\n{out.stderr}")

    def start(self) -> None:
        bindir = install_postgres()
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c max_connections=200"
        if self.fast:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        out = self._run(
            str(bindir / "pg_ctl"), "start", "-w", "-t", "60", "-D", str(self.data), "-l", str(self.log), "-o", options
        )
        if out.returncode:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.is_file() else ""
            raise ClusterError(f"PostgreSQL did not start (log: {self.log}):\n{out.stderr}{log}")

    def stop(self, mode: str = "fast") -> None:
        bindir = postgres_bindir()
        if bindir is not None and (self.data / "postmaster.pid").is_file():
            self._run(str(bindir / "pg_ctl"), "stop", "-w", "-m", mode, "-D", str(self.data))

    def running(self) -> bool:
        return (self.data / "postmaster.pid").is_file() and port_open(self.port)

    def connect(self, db: str = "postgres"):
        import psycopg2

        return psycopg2.connect(host="127.0.0.1", port=self.port, user=DB_USER, password=self.password, dbname=db)

    def create_database(self, name: str) -> None:
        conn = self.connect()
        conn.autocommit = True
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
                if cur.fetchone() is None:
                    cur.execute(f'CREATE DATABASE "{name}"')
        finally:
            conn.close()

    def url(self, db: str) -> str:
        """For tests; the instance files take the password from DAGSTER_PG_PASSWORD instead."""
        return f"postgresql+psycopg2://{DB_USER}:{self.password}@127.0.0.1:{self.port}/{db}"
