"""What every scenario receives: parsed sizes, the databases and feature flags."""

from __future__ import annotations

import argparse
import asyncio
from dataclasses import dataclass, field
from typing import Any

from .memapi import migrate
from .servers import Databases, sqlalchemy_url

__all__ = ["Context", "Target", "run_child", "start_child"]


@dataclass
class Target:
    """A fresh, migrated database: SQLAlchemy URL for memstore, raw address for baselines."""

    backend: str
    url: str
    raw: str  # sqlite URL or libpq DSN


@dataclass
class Context:
    args: argparse.Namespace
    dbs: Databases
    features: dict[str, bool]
    backends: list[str] = field(default_factory=lambda: ["sqlite", "postgres"])
    log: Any = print

    def fresh(self, backend: str, name: str, *, migrated: bool = True) -> Target:
        if backend == "sqlite":
            url = self.dbs.sqlite_url(name)
            target = Target(backend, url, url)
        else:
            dsn = self.dbs.pg_dsn(name)
            target = Target(backend, sqlalchemy_url(dsn), dsn)
        if migrated:
            asyncio.run(migrate(target.url))
        return target


def run_child(*args: str) -> dict[str, Any]:
    """Run ``benchlib.child`` in a fresh interpreter; returns its JSON result."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    scripts = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (scripts, env.get("PYTHONPATH")) if p)
    proc = subprocess.run(
        [sys.executable, "-m", "benchlib.child", *args],
        env=env,
        cwd=scripts,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"child {args[0]} failed: {proc.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def start_child(*args: str) -> Any:
    import os
    import subprocess
    import sys
    from pathlib import Path

    scripts = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (scripts, env.get("PYTHONPATH")) if p)
    return subprocess.Popen(
        [sys.executable, "-m", "benchlib.child", *args],
        env=env,
        cwd=scripts,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
