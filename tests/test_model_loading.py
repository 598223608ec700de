"""A local model that is not there: a ConfigurationError naming it and where memstore
looked, raised before any database exists; a missing extra leaves no database either.

The models are the real sentence-transformers loaders, offline as memstore runs them,
against a private (empty) Hugging Face cache.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memstore import ConfigurationError, MemoryStore
from memstore.embeddings.spec import ModelSpec
from memstore.schema.migrate import upgrade

pytest.importorskip("sentence_transformers")

ROOT = Path(__file__).resolve().parents[1]

OPEN = """
import asyncio, sys
from memstore import MemoryStore
from memstore.errors import MemstoreError

async def main() -> None:
    async with MemoryStore.open(sys.argv[1]):
        pass

try:
    asyncio.run(main())
except (MemstoreError, ImportError) as error:
    print(f"{type(error).__name__}: {error}")
"""


def _env(cache: Path, **settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMSTORE_", "HF_"))}
    return {**env, "PYTHONPATH": str(ROOT), "HF_HUB_CACHE": str(cache), **settings}


def _run(code: str, *args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.sqlite
@pytest.mark.parametrize(
    ("settings", "kind", "name"),
    [
        (
            {
                "MEMSTORE_EMBEDDER": "sentence-transformers",
                "MEMSTORE_EMBEDDER_MODEL": "intfloat/e5-smal",
            },
            "sentence-transformers",
            "intfloat/e5-smal",
        ),
        (
            {
                "MEMSTORE_RERANKER": "cross-encoder",
                "MEMSTORE_RERANKER_MODEL": "cross-encoder/ms-marco-MiniLM-L6-v3",
            },
            "cross-encoder",
            "cross-encoder/ms-marco-MiniLM-L6-v3",
        ),
    ],
    ids=["embedder", "reranker"],
)
def test_a_model_not_in_the_cache_is_named_with_where_memstore_looked(
    settings: dict[str, str], kind: str, name: str, tmp_path: Path
) -> None:
    cache = tmp_path / "hf-cache"
    cache.mkdir()
    done = _run(OPEN, "sqlite:///new.db", cwd=tmp_path, env=_env(cache, **settings))
    assert done.returncode == 0, done.stderr
    line = done.stdout.strip()
    assert line.startswith(f"ConfigurationError: {kind} model {name!r} not found"), line
    assert str(cache) in line and str(tmp_path / name) in line
    assert "offline" in line and "internet connection" not in line
    assert not (tmp_path / "new.db").exists()


@pytest.mark.sqlite
@pytest.mark.parametrize("reranker", [False, True])
async def test_a_directory_without_a_model_is_named(
    reranker: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "not-a-model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    for name in ("MEMSTORE_EMBEDDER", "MEMSTORE_RERANKER"):
        monkeypatch.delenv(name, raising=False)
    models = (
        {"reranker": ModelSpec("cross-encoder", model=str(folder))}
        if reranker
        else {"embedder": ModelSpec("sentence-transformers", model=str(folder))}
    )
    path = tmp_path / "new.db"
    with pytest.raises(ConfigurationError, match="holds no model") as refused:
        async with MemoryStore.open(f"sqlite:///{path}", **models):
            pass
    assert str(folder) in str(refused.value)
    assert refused.value.setting == ("reranker" if reranker else "embedder")
    assert not path.exists()


@pytest.mark.sqlite
def test_a_missing_extra_leaves_no_database(tmp_path: Path) -> None:
    hide = "import sys; sys.modules['sentence_transformers'] = None\n"
    env = _env(tmp_path, MEMSTORE_EMBEDDER="minilm")
    done = _run(hide + OPEN, "sqlite:///new.db", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ImportError: "), done.stdout
    assert "memstore[embeddings]" in done.stdout
    assert not (tmp_path / "new.db").exists()


@pytest.mark.sqlite
def test_the_command_line_says_it_in_one_line(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    asyncio.run(upgrade(url))
    cache = tmp_path / "hf-cache"
    cache.mkdir()
    for command in (["consolidate"], ["mcp", "--user-id", "alice"], ["inspect", "--port", "0"]):
        done = _run(
            "from memstore.cli import main; import sys; raise SystemExit(main(sys.argv[1:]))",
            *command,
            "--url",
            url,
            "--embedder",
            "sentence-transformers",
            "--embedder-model",
            "intfloat/e5-smal",
            cwd=tmp_path,
            env=_env(cache),
        )
        assert done.returncode == 1, (done.stdout, done.stderr)
        assert "Traceback" not in done.stderr, done.stderr
        (line,) = done.stderr.strip().splitlines()
        assert line.startswith(f"memstore {command[0]}: ConfigurationError: ")
        assert "'intfloat/e5-smal' not found" in line and str(cache) in line
