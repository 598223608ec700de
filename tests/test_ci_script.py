""".ci/run builds an environment of its own and never deletes the README's ``.venv``
(the demo command's, which may hold whatever else its user installed)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / ".ci" / "run"


def test_the_default_environment_is_ci_s_own() -> None:
    (default,) = re.findall(r"^VENV=\$\{VENV:-([^}]+)\}$", SCRIPT.read_text(), re.M)
    assert Path(default).resolve() != Path(".venv").resolve()
    assert (
        f"{default.removeprefix('./').rstrip('/')}/"
        in (ROOT / ".gitignore").read_text().splitlines()
    )


@pytest.mark.parametrize("venv", [".venv", "./.venv", "{root}/.venv", ".venv/"])
def test_it_refuses_the_readme_s_venv_before_doing_anything(tmp_path: Path, venv: str) -> None:
    if shutil.which("realpath") is None:
        pytest.skip("needs coreutils' realpath, as .ci/run does")
    # A copy of the script in a checkout of its own: if the guard failed, nothing of
    # this repository would be touched.
    (tmp_path / ".ci").mkdir()
    shutil.copy(SCRIPT, tmp_path / ".ci" / "run")
    marker = tmp_path / ".venv" / "pyvenv.cfg"
    marker.parent.mkdir()
    marker.write_text("home = /usr/bin\n")
    done = subprocess.run(
        ["bash", str(tmp_path / ".ci" / "run")],
        env={"PATH": "/usr/bin:/bin", "VENV": venv.format(root=tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2, done.stderr
    assert "refusing to rebuild .venv" in done.stderr
    assert marker.read_text() == "home = /usr/bin\n"
