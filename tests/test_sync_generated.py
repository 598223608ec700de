"""The sync API is generated source: current, and typed for the programs that use it."""

from __future__ import annotations

import difflib
import functools
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_sync", REPO / "scripts/gen_sync.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Registered before it runs: its dataclasses look their module up.
    sys.modules.setdefault("gen_sync", module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "output", ["memstore/sync/_generated.py", "memstore/sync/_generated_views.py"]
)
def test_generated_sync_module_is_current(output: str) -> None:
    pytest.importorskip("ruff", reason="the generator formats with ruff (the dev extra)")
    gen = _generator()
    assert output in gen.OUTPUTS
    expected = gen.render(output)
    committed = (REPO / output).read_text()
    if committed != expected:
        diff = "".join(
            difflib.unified_diff(
                committed.splitlines(keepends=True),
                expected.splitlines(keepends=True),
                f"{output} (committed)",
                f"{output} (generated now)",
            )
        )
        pytest.fail(
            f"{output} is stale: run python scripts/gen_sync.py\n{diff[:6000]}",
            pytrace=False,
        )


# A program that uses the sync API as the README does; under mypy --strict, any method
# that reaches mypy as Any fails it ("Returning Any from function declared to return").
GOOD = """\
from memstore import Episode, Slot, SyncMemoryStore
from memstore.sync import SyncThreadBuffer, SyncWorkingMemory


def remember(store: SyncMemoryStore) -> str:
    return store.remember(Episode(session_id="s", user_id="u", input="hi", output="ok"))


def first_hit(store: SyncMemoryStore) -> str | None:
    hits = store.recall("hi", user_id="u", limit=3)
    return hits[0].id if hits else None


def append(threads: SyncThreadBuffer) -> int:
    slot = threads.append("t1", {"q": 1}, from_id="user", to_id="agent", user_id="u")
    return slot.metadata.slot_index


def slots(threads: SyncThreadBuffer) -> list[Slot]:
    return list(threads.iterate("t1", user_id="u"))


def scratch(store: SyncMemoryStore) -> SyncWorkingMemory | None:
    wm = store.working_memory(session_id="s", user_id="u")
    wm.set("plan", {"steps": [1, 2]})
    return wm.parent()


def handle(store: SyncMemoryStore) -> list[str]:
    alice = store.tenant("u")
    alice.remember(Episode(session_id="s", input="hi"))
    alice.threads.append("t1", {"q": 1}, from_id="user", to_id="agent")
    return [e.id for e in alice.recall("hi", limit=3)]


def count(store: SyncMemoryStore) -> int:
    return store.threads.length("t1", user_id="u") + store.forget(user_id="u")


def main(url: str) -> int:
    with SyncMemoryStore.open(url, auto_migrate=True, block_char_limit=100) as store:
        remember(store)
        append(store.threads)
        return count(store)
"""

# Each line marked "# wrong" passes a wrong argument type (or a misspelt method);
# mypy must report every one of them.
BAD = """\
from memstore import SyncMemoryStore


def main(url: str) -> None:
    with SyncMemoryStore.open(url, block_char_limit="big") as store:  # wrong
        store.recall(42, user_id="u")  # wrong
        store.remember("not an episode")  # wrong
        store.threads.length("t1", user_id=7)  # wrong
        store.working_memory(session_id="s", user_id="u").set(1, "v")  # wrong
        store.recal("x", user_id="u")  # wrong
        store.recall("fine", user_id="u")
        store.tenant("u").recall(42)  # wrong
        store.tenant("u").recall("x", user_id="u")  # wrong
        store.tenant("u").threads.length("t1", user_id="u")  # wrong
        store.tenant("u").recall("fine", limit=2)
"""


@pytest.fixture(scope="module")
def mypy_output() -> Iterator[str]:
    """mypy --strict on GOOD and BAD in a private directory, with its own cache."""
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed (the dev extra)")
    private = Path(tempfile.mkdtemp(prefix="memstore-sync-mypy-"))
    try:
        (private / "good.py").write_text(GOOD)
        (private / "bad.py").write_text(BAD)
        env = {**os.environ, "MYPYPATH": str(REPO)}
        env.pop("PYTHONPATH", None)
        # Only the two programs are judged (memstore itself is CI's mypy run): memstore
        # is read silently, third-party packages not at all, which keeps this fast.
        (private / "mypy.ini").write_text(
            "[mypy]\nstrict = True\nfollow_imports = skip\n\n"
            "[mypy-memstore.*]\nfollow_imports = silent\n"
        )
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "mypy",
                "--config-file",
                "mypy.ini",
                "--cache-dir",
                str(private / "cache"),
                "--no-error-summary",
                "--hide-error-context",
                "good.py",
                "bad.py",
            ],
            cwd=private,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode not in (0, 1) or done.stderr.strip():
            pytest.fail(f"mypy did not run (exit {done.returncode}):\n{done.stderr}{done.stdout}")
        yield done.stdout
    finally:
        shutil.rmtree(private, ignore_errors=True)


def _errors(output: str, filename: str) -> dict[int, list[str]]:
    found: dict[int, list[str]] = {}
    for line in output.splitlines():
        m = re.match(rf"{re.escape(filename)}:(\d+): error: (.*)", line)
        if m:
            found.setdefault(int(m.group(1)), []).append(m.group(2))
    return found


def test_a_program_using_the_sync_store_is_mypy_strict_clean(mypy_output: str) -> None:
    assert _errors(mypy_output, "good.py") == {}, mypy_output


def test_mypy_reports_wrong_argument_types_to_the_sync_store(mypy_output: str) -> None:
    wrong = [n for n, line in enumerate(BAD.splitlines(), 1) if line.endswith("# wrong")]
    errors = _errors(mypy_output, "bad.py")
    missed = [BAD.splitlines()[n - 1].strip() for n in wrong if n not in errors]
    assert missed == [], f"mypy reported nothing for: {missed}\n{mypy_output}"
    assert set(errors) == set(wrong), mypy_output


# A facade whose methods are forwards to a service (functools.wraps), as MemoryStore's
# may become: the generator must still see coroutines and async iterators.
class _Service:
    async def remember(self, text: str, *, user_id: str | None = None) -> int:
        """Store ``text``."""
        return len(text)

    async def stream(self, *, user_id: str | None = None) -> AsyncIterator[int]:
        yield 1


def _forward(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.service, method.__name__)(*args, **kwargs)

    return call


class _Facade:
    remember = _forward(_Service.remember)
    stream = _forward(_Service.stream)


def test_generator_mirrors_typed_forwards() -> None:
    gen = _generator()
    spec = gen.SyncClass("SyncFacade", f"{__name__}:_Facade", doc="Sync facade.")
    text = gen.render_unformatted((spec,))
    assert "def remember(self, text: str, *, user_id: str | None = None) -> int:" in text
    assert "share_docstrings(SyncFacade, _Facade)" in text  # docstrings come from the twin
    assert "return self._runner.run(self._target.remember(text, user_id=user_id))" in text
    assert "def stream(self, *, user_id: str | None = None) -> Iterator[int]:" in text
    assert "return self._iterate(self._target.stream(user_id=user_id))" in text


def test_sync_methods_carry_the_async_docstrings() -> None:
    from memstore import MemoryStore, SyncMemoryStore

    assert SyncMemoryStore.remember.__doc__ == MemoryStore.remember.__doc__
    assert SyncMemoryStore.recall.__doc__
