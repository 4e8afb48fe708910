"""A throwaway PostgreSQL cluster for tests and benchmarks: initdb + pg_ctl on a free local port.

Run as root (CI), the server runs as the ``postgres`` user (initdb refuses root). The cluster
lives in its own directory under the system temp dir and is stopped and removed afterwards.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path


def find_bin() -> Path | None:
    """The directory holding initdb and pg_ctl (the newest Debian install), or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version)
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).resolve().parent if initdb else None


def _version(path: str) -> float:
    try:
        return float(path.split("/")[4])
    except (IndexError, ValueError):
        return 0.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Cluster:
    bindir: Path
    root: Path
    port: int
    prefix: list[str]

    @property
    def admin_url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def url(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def _run(self, *args: str) -> None:
        subprocess.run([*self.prefix, *args], check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        data, log = self.root / "data", self.root / "server.log"
        self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(data),
            "-A",
            "trust",
            "-U",
            "postgres",
            "-E",
            "UTF8",
            "--no-locale",
        )
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off"
        )
        self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(data),
            "-o",
            options,
            "-l",
            str(log),
            "-w",
            "-t",
            "60",
            "start",
        )

    def stop(self) -> None:
        try:
            self._run(
                str(self.bindir / "pg_ctl"),
                "-D",
                str(self.root / "data"),
                "-m",
                "immediate",
                "-w",
                "stop",
            )
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def start_cluster() -> Cluster | str:
    """A started cluster, or the reason none can start here (the tests then skip)."""
    bindir = find_bin()
    if bindir is None:
        return "no PostgreSQL server binary (initdb) is installed"
    root = Path(tempfile.mkdtemp(prefix="qb-pg-"))
    prefix: list[str] = []
    if os.geteuid() == 0:
        runuser = shutil.which("runuser")
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no postgres user to run the server"
        if runuser is None:
            return "running as root without runuser to start the server as postgres"
        os.chown(root, user.pw_uid, user.pw_gid)
        prefix = [runuser, "-u", "postgres", "--"]
    cluster = Cluster(bindir, root, _free_port(), prefix)
    try:
        cluster.start()
    except (subprocess.SubprocessError, OSError) as exc:
        log = root / "server.log"
        detail = log.read_text(errors="replace")[-500:] if log.exists() else ""
        shutil.rmtree(root, ignore_errors=True)
        return f"the throwaway PostgreSQL cluster did not start: {exc} {detail}"
    return cluster
