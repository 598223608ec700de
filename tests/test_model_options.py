"""One definition of the model options (memstore.core.model_spec): ``ModelSpec``, the
environment, every command that opens a store and docs/configuration.md all carry
every option it defines, under the names it spells, and nothing else."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from doc_blocks import section

import memstore
from memstore import ConfigurationError, MemoryStore
from memstore.cli import build_parser
from memstore.cli.embedder_args import reranker_spec_from_args, spec_from_args
from memstore.core.model_spec import EMBEDDER, FAMILIES, OPTIONS, RERANKER, ModelFamily
from memstore.embeddings.spec import embedder_from_spec, prepare_embedder
from memstore.rerankers.spec import resolve_reranker

ROOT = Path(__file__).resolve().parents[1]
# Every command that opens a store with an embedder; those that recall take a reranker too.
EMBEDDER_COMMANDS = ("consolidate", "import", "inspect", "mcp", "reembed")
RERANKER_COMMANDS = ("inspect", "mcp")
SAMPLES: dict[type, tuple[str, Any]] = {str: ("query: ", "query: "), int: ("7", 7)}
SAMPLES[float] = ("2.5", 2.5)


def _sample(option: str) -> tuple[str, Any]:
    return SAMPLES[OPTIONS[option].kind]


def test_model_spec_is_exported_and_is_the_one_the_store_takes() -> None:
    from memstore import ModelSpec
    from memstore.embeddings.spec import ModelSpec as EmbedderSpec

    assert ModelSpec is EmbedderSpec and "ModelSpec" in memstore.__all__


def test_model_spec_carries_exactly_the_options_of_the_families() -> None:
    defined = {option for family in FAMILIES for option in family.options}
    assert {f.name for f in fields(memstore.ModelSpec)} == {"name", *defined}
    assert set(OPTIONS) == defined
    forms = {"query_prefix", "document_prefix", "query_input_type", "document_input_type"}
    assert forms | {"dim", "timeout", "max_retries"} <= set(EMBEDDER.options)
    assert {"candidates", "timeout", "max_retries"} <= set(RERANKER.options)


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_the_environment_sets_every_option(family: ModelFamily) -> None:
    env = {family.variable(): "openai"}
    expected: dict[str, Any] = {}
    for option in family.options:
        env[family.variable(option)], expected[option] = _sample(option)
    assert memstore.ModelSpec.from_env(family.env, env) == memstore.ModelSpec("openai", **expected)
    bad = {family.variable(): "x", family.variable("max_retries"): "two"}
    with pytest.raises(ConfigurationError, match=family.variable("max_retries")):
        memstore.ModelSpec.from_env(family.env, bad)


@pytest.mark.parametrize("command", EMBEDDER_COMMANDS)
def test_every_command_that_opens_a_store_takes_every_option(
    command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for family in FAMILIES:
        for option in family.options:
            monkeypatch.delenv(family.variable(option), raising=False)
        monkeypatch.delenv(family.variable(), raising=False)
    families = [(EMBEDDER, spec_from_args)]
    if command in RERANKER_COMMANDS:
        families.append((RERANKER, reranker_spec_from_args))
    for family, read in families:
        argv = [command, family.flag(), "openai" if family is EMBEDDER else "http"]
        expected: dict[str, Any] = {}
        for option in family.options:
            text, expected[option] = _sample(option)
            argv += [family.flag(option), text]
        args = build_parser(["--help"]).parse_args(argv)
        assert read(args) == memstore.ModelSpec(argv[2], **expected), (command, family.name)


def test_a_command_option_overrides_the_environment_s(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(EMBEDDER.variable(), "openai")
    monkeypatch.setenv(EMBEDDER.variable("query_input_type"), "query")
    monkeypatch.setenv(EMBEDDER.variable("document_input_type"), "passage")
    argv = ["consolidate", EMBEDDER.flag("query_input_type"), "search_query"]
    spec = spec_from_args(build_parser(["--help"]).parse_args(argv))
    assert spec is not None
    assert (spec.query_input_type, spec.document_input_type) == ("search_query", "passage")


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        ("hashing", {"query_input_type": "query"}, "takes no query_input_type"),
        ("minilm", {"timeout": 5.0}, "takes no timeout"),
        ("hashing", {"query_prefix": "query: "}, "takes no model or prefixes"),
    ],
)
def test_an_option_the_kind_does_not_take_is_refused(
    name: str, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        embedder_from_spec(name, **options)


def test_an_option_of_the_other_family_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="an embedder takes no candidates"):
        prepare_embedder(memstore.ModelSpec("hashing", candidates=5))
    with pytest.raises(ConfigurationError, match="a reranker takes no dim, query_input_type"):
        resolve_reranker(memstore.ModelSpec("http", dim=5, query_input_type="query"))


async def test_the_reranker_spec_sets_the_candidates_of_every_recall(db_url: str) -> None:
    pytest.importorskip("httpx", reason="the http reranker needs memstore[rerank]")
    spec = memstore.ModelSpec("http", model="m", base_url="http://127.0.0.1:9/v1", candidates=7)
    async with MemoryStore.open(db_url, reranker=spec) as store:
        assert store.config.rerank_candidates == 7
    async with MemoryStore.open(db_url, reranker=spec, rerank_candidates=9) as store:
        assert store.config.rerank_candidates == 7  # the reranker's own wins
    plain = memstore.ModelSpec("http", model="m", base_url="http://127.0.0.1:9/v1")
    async with MemoryStore.open(db_url, reranker=plain, rerank_candidates=9) as store:
        assert store.config.rerank_candidates == 9


# ---- docs/configuration.md lists each option, under its names, and no other --------------

SPELLED = re.compile(
    r"\b(MEMSTORE_(?:EMBEDDER|RERANKER)_[A-Z_]*[A-Z])\b|(--(?:embedder|reranker)-[a-z-]*[a-z])"
)


def _doc() -> str:
    return section("docs/configuration.md", "# Configuration reference")


def _rows(doc: str) -> list[str]:
    return [line for line in doc.splitlines() if line.startswith("| ")]


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_the_reference_lists_every_option_with_its_variable_and_flag(family: ModelFamily) -> None:
    rows = _rows(_doc())
    missing = []
    for option in family.options:
        variable, flag = family.variable(option), family.flag(option)
        if not any(row.startswith(f"| `{variable}`") for row in rows):
            missing.append(f"no row for {variable}")
        if not any(flag in row for row in rows):
            missing.append(f"no row names {flag}")
    assert missing == []


def test_the_reference_names_no_option_that_does_not_exist() -> None:
    known = {family.key for family in FAMILIES}
    for family in FAMILIES:
        known |= {family.variable(option) for option in family.options}
        known |= {family.flag(option) for option in family.options}
    named = {a or b for a, b in SPELLED.findall(_doc())}
    assert named, "the pattern finds the options"
    assert sorted(named - known) == []
