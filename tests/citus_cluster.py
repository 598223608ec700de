"""A private Citus cluster (coordinator + two workers) for tests, from ``../shared/citus``.

The cluster scripts live beside the repository, not in it: Citus is AGPL and built for
Debian's PostgreSQL 15, so it is installed on the machine (``install.sh``, needs root)
rather than shipped. :func:`citus_unavailable` says why a cluster cannot run here, so a
test or a CI stage can skip with that reason instead of failing obscurely.

Every cluster gets its own ``tempfile.mkdtemp`` directory and free ports; teardown stops
all three servers and checks that none of their postmasters is left.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["CITUS_DIR", "SHARD_COUNT", "CitusCluster", "citus_unavailable", "private_citus_cluster"]

CITUS_DIR = Path(
    os.environ.get(
        "MEMSTORE_TEST_CITUS_DIR", Path(__file__).resolve().parents[1].parent / "shared" / "citus"
    )
)
_BIN = Path("/usr/lib/postgresql/15/bin")
_NODES = 3
# Shards per distributed table in test databases (Citus's default is 32).
SHARD_COUNT = 4
# Cluster starts tried on fresh ports before giving up (private_citus_cluster).
_START_ATTEMPTS = 3


def citus_unavailable() -> str | None:
    """Why no Citus cluster can start on this machine, or None when one can."""
    if not (CITUS_DIR / "cluster.sh").is_file():
        return f"no Citus cluster scripts at {CITUS_DIR} (set MEMSTORE_TEST_CITUS_DIR)"
    if os.geteuid() != 0:
        return "cluster.sh runs the servers as the postgres user, which needs root"
    if not (_BIN / "pg_ctl").is_file():
        return f"no PostgreSQL 15 at {_BIN}: run {CITUS_DIR / 'install.sh'}"
    if not list(Path("/usr/lib/postgresql/15/lib").glob("citus*.so")):
        return f"Citus is not installed for PostgreSQL 15: run {CITUS_DIR / 'install.sh'}"
    return None


class CitusCluster:
    """A running cluster on which tests create throw-away distributed databases."""

    def __init__(self, directory: Path, port: int) -> None:
        self.directory = directory
        self.port = port

    def run_script(self, *args: str) -> str:
        done = subprocess.run(
            ["bash", str(CITUS_DIR / "cluster.sh"), *args],
            check=True,
            capture_output=True,
            text=True,
            timeout=180,
        )
        return done.stdout.strip().splitlines()[-1]

    def create_database(self, name: str, *, shard_count: int = SHARD_COUNT) -> str:
        """A new database on every node with citus and vector, workers registered; its URL.

        Tables distributed in it get ``shard_count`` shards (two per worker by default:
        still several shards per node, but DDL and multi-shard wipes touch 4, not 32).
        """
        url = self.run_script("createdb", str(self.directory), name, str(self.port))
        self.psql(name, f'ALTER DATABASE "{name}" SET citus.shard_count = {int(shard_count)}')
        # asyncpg introspects types on every new connection with a catalog query that
        # Citus's shard-hiding filter on pg_class made 1.3 s instead of 10 ms (the
        # coordinator holds no shards to hide; docs/SCALING.md recommends this too).
        self.psql(name, f'ALTER DATABASE "{name}" SET citus.override_table_visibility = off')
        return url

    def psql(self, database: str, sql: str, *, node: int = 0) -> str:
        """Run ``sql`` with psql on a node (0 = coordinator); its unaligned output."""
        done = subprocess.run(
            [
                str(_BIN / "psql"),
                "-X",
                "-q",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
                "-h",
                "127.0.0.1",
                "-p",
                str(self.port + node),
                "-U",
                "postgres",
                "-d",
                database,
                "-c",
                sql,
            ],
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
        )
        return done.stdout.strip()

    def postmaster_pids(self) -> set[int]:
        pids: set[int] = set()
        for port in range(self.port, self.port + _NODES):
            try:
                pids.add(
                    int((self.directory / f"n{port}" / "postmaster.pid").read_text().split()[0])
                )
            except (OSError, ValueError, IndexError):
                continue
        return pids


def _free_port_run(count: int) -> int:
    """The first of ``count`` consecutive ports on 127.0.0.1 that nothing listens on."""
    for _ in range(200):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            first = int(probe.getsockname()[1])
        if first + count > 65535:
            continue
        ok = True
        for port in range(first, first + count):
            with socket.socket() as probe:
                try:
                    probe.bind(("127.0.0.1", port))
                except OSError:
                    ok = False
                    break
        if ok:
            return first
    raise RuntimeError("no run of free ports for a Citus cluster")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


@contextmanager
def private_citus_cluster(prefix: str = "memstore-citus-") -> Iterator[CitusCluster]:
    """Start a coordinator and two workers in a private directory; stop them for sure."""
    reason = citus_unavailable()
    if reason is not None:
        raise RuntimeError(reason)
    # The ports are free when probed, not reserved: a concurrent session (pytest-xdist's
    # other worker starts its own cluster at the same moment) may take one first, and
    # then this start fails. Stop what started and try other ports.
    for attempt in range(_START_ATTEMPTS):
        cluster = CitusCluster(Path(tempfile.mkdtemp(prefix=prefix)), _free_port_run(_NODES))
        pids: set[int] = set()
        try:
            cluster.run_script("start", str(cluster.directory), str(cluster.port))
        except subprocess.CalledProcessError:
            _stop(cluster, pids)
            if attempt + 1 == _START_ATTEMPTS:
                raise
            continue
        break
    try:
        pids |= cluster.postmaster_pids()
        yield cluster
    finally:
        _stop(cluster, pids)


def _stop(cluster: CitusCluster, pids: set[int]) -> None:
    """Stop the cluster's servers, remove its directory, check no postmaster is left."""
    directory = cluster.directory
    pids |= cluster.postmaster_pids()
    subprocess.run(
        ["bash", str(CITUS_DIR / "cluster.sh"), "stop", str(directory)],
        capture_output=True,
        timeout=120,
        check=False,
    )
    for pid in pids:
        if _alive(pid):
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
    shutil.rmtree(directory, ignore_errors=True)
    left = [pid for pid in pids if _alive(pid)]
    assert not left, f"Citus postmasters outlived their test cluster: {left}"
