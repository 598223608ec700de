"""One set of names for the embedder: MemoryStore.open(embedder=...), $MEMSTORE_EMBEDDER and
the CLI's --embedder all go through memstore.embeddings.spec."""

from __future__ import annotations

import pytest

from memstore import ConfigurationError, DimensionMismatch, Episode, MemoryStore
from memstore.cli import build_parser
from memstore.embeddings import HashingEmbedder
from memstore.embeddings.spec import EMBEDDER_NAMES, ModelSpec, embedder_from_spec


def test_the_cli_offers_exactly_the_names_open_takes() -> None:
    for command in ("reembed", "inspect", "import", "consolidate"):
        args = build_parser(["--help"]).parse_args([command, "--embedder", "openai"])
        assert args.embedder == "openai"
    with pytest.raises(SystemExit):
        build_parser(["--help"]).parse_args(["reembed", "--embedder", "word2vec"])
    assert set(EMBEDDER_NAMES) == {"hashing", "sentence-transformers", "minilm", "openai"}


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        ("word2vec", {}, "unknown embedder 'word2vec'"),
        ("openai", {}, "needs a model name"),
        ("hashing", {"model": "x"}, "takes no model"),
        ("hashing", {"base_url": "http://127.0.0.1:1/v1"}, "takes no base URL"),
        ("minilm", {"dim": 128}, "its own width"),
    ],
)
def test_a_name_or_option_that_does_not_fit_is_a_configuration_error(
    name: str, options: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        embedder_from_spec(name, **options)  # type: ignore[arg-type]


def test_the_environment_is_read_with_the_same_names() -> None:
    env = {"MEMSTORE_EMBEDDER": "openai", "MEMSTORE_EMBEDDER_MODEL": "m"}
    env |= {"MEMSTORE_EMBEDDER_BASE_URL": "http://h/v1", "MEMSTORE_EMBEDDER_DIM": "256"}
    assert ModelSpec.from_env(env=env) == ModelSpec("openai", "m", "http://h/v1", 256)
    assert ModelSpec.from_env(env={}) is None
    with pytest.raises(ConfigurationError, match="MEMSTORE_EMBEDDER_DIM"):
        ModelSpec.from_env(env={"MEMSTORE_EMBEDDER": "hashing", "MEMSTORE_EMBEDDER_DIM": "x"})


async def test_open_builds_a_named_embedder_at_the_recorded_width(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with MemoryStore.open(db_url, embedder="hashing") as store:
        assert isinstance(store.embedder, HashingEmbedder) and store.embedder.dim == 384
        await store.remember(Episode(session_id="s", user_id="u", input="I live in Berlin"))
    monkeypatch.setenv("MEMSTORE_EMBEDDER", "hashing")
    monkeypatch.setenv("MEMSTORE_EMBEDDER_DIM", "128")
    with pytest.raises(DimensionMismatch):
        async with MemoryStore.open(db_url):
            pass
    # An argument wins over the environment.
    async with MemoryStore.open(db_url, embedder=ModelSpec("hashing", dim=384)) as store:
        assert (await store.recall("Berlin", user_id="u"))[0].input == "I live in Berlin"
