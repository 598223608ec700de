"""Private PostgreSQL servers for tests (pgserver), stopped for sure and checked to be gone.

Every server gets its own ``tempfile.mkdtemp`` directory: never pytest's per-user
temp root, which a concurrent pytest run may prune while this one still uses it.
Teardown stops the postmaster named in ``postmaster.pid`` *now* (a server that
was restarted has a different pid from the one pgserver remembers, so its own
cleanup would skip the stop and delete the data directory under a live server),
then verifies that no process of the server is left.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["live_postmaster_pid", "pg_ctl", "private_pgserver", "stop_and_verify"]

STOP_TIMEOUT_S = 60


def live_postmaster_pid(pgdata: Path) -> int | None:
    """The pid in ``postmaster.pid`` if that process is alive, else None."""
    import psutil

    try:
        pid = int((pgdata / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pid if psutil.pid_exists(pid) else None


def pg_ctl(server: Any, *args: str) -> None:
    from pgserver._commands import pg_ctl as run

    run(list(args), pgdata=server.pgdata, user=server.system_user, timeout=STOP_TIMEOUT_S)


def stop_and_verify(server: Any, pids: set[int]) -> None:
    """Stop ``server`` (whatever pgserver thinks), release pgserver's handle, and
    raise AssertionError if a postmaster seen during the run is still alive."""
    import psutil

    pgdata = Path(server.pgdata)
    pid = live_postmaster_pid(pgdata)
    if pid is not None:
        pids.add(pid)
        try:
            pg_ctl(server, "-w", "-m", "fast", "stop")
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
            pass  # killed below
    for pid in pids:
        try:
            process = psutil.Process(pid)
        except psutil.NoSuchProcess:
            continue
        children = process.children(recursive=True)
        for each in [process, *children]:
            try:
                each.kill()
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs([process, *children], timeout=10)
    # pgserver's own bookkeeping (handle list, atexit hook); the server is down,
    # so this stops nothing.
    server.cleanup()
    left = [
        pid
        for pid in pids
        if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    ]
    assert not left, f"postgres processes outlived their test server: {left}"


def _no_fsync(server: Any) -> None:
    """Turn fsync off on a throw-away server (persisted, so a restart keeps it).

    A test server's data dies with its directory, so waiting for the disk buys nothing:
    with fsync on, each per-test wipe (a TRUNCATE: new files, a checkpointed commit)
    cost ~0.2 s and each CREATE DATABASE ~0.6 s of idle I/O wait, most of the
    Postgres tests' time. A killed or stopped postmaster still loses nothing: its
    writes are in the kernel's page cache, only a machine crash would drop them.
    The Citus cluster (../shared/citus/cluster.sh) runs with fsync = off too.
    """
    server.psql("ALTER SYSTEM SET fsync = off")
    server.psql("SELECT pg_reload_conf()")


@contextmanager
def private_pgserver(prefix: str = "memstore-pg-") -> Iterator[tuple[Any, set[int]]]:
    """A fresh pgserver in a private directory; yields ``(server, pids)``.

    Add the pid of every postmaster you start yourself (``pids``); all are
    checked to be gone afterwards. The directory is removed even on failure.
    """
    import pgserver

    root = Path(tempfile.mkdtemp(prefix=prefix))
    pids: set[int] = set()
    try:
        server = pgserver.get_server(root / "data", cleanup_mode="stop")
        try:
            if (pid := live_postmaster_pid(Path(server.pgdata))) is not None:
                pids.add(pid)
            _no_fsync(server)
            yield server, pids
        finally:
            stop_and_verify(server, pids)
    finally:
        shutil.rmtree(root, ignore_errors=True)
