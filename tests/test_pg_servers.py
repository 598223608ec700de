"""The tests' own PostgreSQL servers leave nothing behind: no process, no directory,
even after a restart (a new postmaster pgserver does not know about) or a failure."""

from __future__ import annotations

import tempfile
from pathlib import Path

import psutil
import pytest

from tests.pg_servers import live_postmaster_pid, pg_ctl, private_pgserver

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def test_private_server_is_outside_pytest_temp_root_and_fully_stopped(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    with private_pgserver("memstore-selftest-") as (server, pids):
        pgdata = Path(server.pgdata)
        shared_root = Path(tempfile.gettempdir()) / "pytest-of-"
        assert not str(pgdata).startswith(str(shared_root))
        assert tmp_path_factory.getbasetemp() not in pgdata.parents
        first = live_postmaster_pid(pgdata)
        assert first is not None
        # Restart, as the fault tests do: pgserver still remembers the first pid.
        info = server.get_postmaster_info()
        pg_ctl(server, "-w", "-m", "fast", "stop")
        pg_ctl(
            server,
            "-w",
            "-o",
            '-h ""',
            "-o",
            f"-k {info.socket_dir}",
            "-l",
            str(server.log),
            "start",
        )
        second = live_postmaster_pid(pgdata)
        assert second is not None and second != first
        pids.add(second)
    assert not psutil.pid_exists(second), "the restarted postmaster outlived teardown"
    assert not pgdata.exists()


def test_server_is_stopped_when_the_test_body_fails() -> None:
    with (
        pytest.raises(RuntimeError, match="boom"),
        private_pgserver("memstore-selftest-") as (server, _pids),
    ):
        pgdata = Path(server.pgdata)
        pid = live_postmaster_pid(pgdata)
        assert pid is not None
        raise RuntimeError("boom")
    assert not psutil.pid_exists(pid)
    assert not pgdata.exists()
