"""Every ``--flag`` a message or a help text names is an option of the command it is about.

Three sources: the string constants of the package (errors, help, docstrings), each
parser's help texts, and the errors the model specs build at run time (their flags are
spelled from :class:`memstore.core.model_spec.ModelFamily`, so no literal shows them).
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memstore import Episode, MemoryStore
from memstore.cli import build_parser
from memstore.cli.embedder_args import reranker_spec_from_args, spec_from_args
from memstore.embeddings.spec import embedder_from_spec
from memstore.errors import ConfigurationError
from memstore.rerankers.spec import reranker_from_spec

ROOT = Path(__file__).resolve().parents[1]
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
# argparse's own, on every parser.
BUILT_IN = {"--help", "--version"}
# A module that belongs to one command: its strings speak of that command.
MODULE_COMMAND = {
    "memstore/cli/import_dump.py": "import",
    "memstore/mcp": "mcp",
    "memstore/inspect": "inspect",
}


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    # argparse offers no public way to list sub-commands or options.
    for action in parser._actions:  # noqa: SLF001
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            return dict(action.choices)
    raise AssertionError("no sub-commands")


COMMANDS = _subparsers(build_parser())


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    return {o for a in parser._actions for o in a.option_strings} | BUILT_IN  # noqa: SLF001


FLAGS = {name: _flags(sub) for name, sub in COMMANDS.items()}


COMMAND_NAMED = re.compile(rf"\bmemstore ({'|'.join(map(re.escape, COMMANDS))})\b")
SENTENCE_END = re.compile(r"(?<=[.;:!?])\s+(?=[A-Z`(])|\n\s*\n")


def _flags_by_command(text: str, own: str | None) -> list[tuple[str, set[str]]]:
    """Each flag of ``text`` with the commands it must exist on: the last one a
    ``memstore <command>`` of its sentence names before it (else the module's own;
    else any command)."""
    found = []
    for sentence in SENTENCE_END.split(text):
        for match in FLAG.finditer(sentence):
            named = COMMAND_NAMED.findall(sentence[: match.start()])
            commands = {named[-1]} if named else ({own} if own else set(COMMANDS))
            found.append((match.group(), commands))
    return found


def _module_command(path: Path) -> str | None:
    relative = path.relative_to(ROOT).as_posix()
    for prefix, command in MODULE_COMMAND.items():
        if relative == prefix or relative.startswith(prefix + "/"):
            return command
    if relative.startswith("memstore/cli/") and path.stem in COMMANDS:
        return path.stem
    return None


def _strings(path: Path) -> list[tuple[int, str]]:
    """The string constants of ``path``; an f-string's literal parts joined by ``{}``."""
    found: list[tuple[int, str]] = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    inside_fstrings: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts = [
                v.value if isinstance(v, ast.Constant) else "{}"
                for v in node.values
                if isinstance(v, ast.Constant | ast.FormattedValue)
            ]
            found.append((node.lineno, "".join(str(p) for p in parts)))
            inside_fstrings.update(id(v) for v in node.values)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in inside_fstrings
        ):
            found.append((node.lineno, node.value))
    return found


def _wrong_flags(text: str, own: str | None) -> list[str]:
    """The flags of ``text`` that none of the commands they are about has."""
    return sorted(
        {
            flag
            for flag, commands in _flags_by_command(text, own)
            if not any(flag in FLAGS[c] for c in commands)
        }
    )


def test_every_flag_a_string_of_the_package_names_exists() -> None:
    wrong = []
    for path in sorted((ROOT / "memstore").rglob("*.py")):
        own = _module_command(path)
        for line, text in _strings(path):
            wrong += [f"{path.relative_to(ROOT)}:{line}: {f}" for f in _wrong_flags(text, own)]
    assert wrong == []


def test_every_flag_a_help_text_names_is_an_option_of_its_command() -> None:
    wrong = []
    for name, sub in COMMANDS.items():
        texts = [sub.description or "", *(str(a.help or "") for a in sub._actions)]  # noqa: SLF001
        for text in texts:
            wrong += [f"{name}: {f}" for f in _wrong_flags(text, name)]
    assert wrong == []


def _message(call: object) -> str:
    with pytest.raises(ConfigurationError) as caught:
        call()  # type: ignore[operator]
    return str(caught.value)


def _model_messages(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """Per option family, the errors its specs raise that name where to set something."""
    for name in ("MEMSTORE_EMBEDDER", "MEMSTORE_RERANKER"):
        monkeypatch.delenv(name, raising=False)
    mcp = COMMANDS["mcp"].parse_args(["--embedder-dim", "64"])
    inspect = COMMANDS["inspect"].parse_args(["--reranker-model", "m"])
    return {
        "--embedder": [
            _message(lambda: embedder_from_spec("openai")),
            _message(lambda: embedder_from_spec("hashing", dim=0)),
            _message(lambda: spec_from_args(mcp)),
        ],
        "--reranker": [
            _message(lambda: reranker_from_spec("http")),
            _message(lambda: reranker_from_spec("http", model="m")),
            _message(lambda: reranker_spec_from_args(inspect)),
        ],
    }


def test_the_model_errors_name_options_every_command_with_models_has(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    messages = _model_messages(monkeypatch)
    wrong = []
    for family, texts in messages.items():
        commands = {c for c, flags in FLAGS.items() if family in flags}
        assert len(commands) >= 2, family
        for text in texts:
            assert FLAG.findall(text), text  # each says where to fix it
            wrong += [f"{family}: {c}: {f}" for c in commands for f in _wrong_flags(text, c)]
    assert wrong == []


def test_every_command_that_searches_or_embeds_takes_the_same_model_options() -> None:
    embedder = {"--embedder", "--embedder-model", "--embedder-base-url", "--embedder-dim"}
    reranker = {"--reranker", "--reranker-model", "--reranker-base-url"}
    for command in ("consolidate", "import", "inspect", "mcp", "reembed"):
        assert embedder <= FLAGS[command], command
    for command in ("inspect", "mcp"):
        assert reranker <= FLAGS[command], command


@pytest.mark.sqlite
def test_mcp_opens_the_store_with_the_embedder_its_options_name(tmp_path: Path) -> None:
    pytest.importorskip("mcp", reason="memstore mcp needs memstore[mcp]")
    url = f"sqlite:///{tmp_path / 'store.db'}"

    async def remember() -> None:
        async with MemoryStore.open(url) as store:  # hashing, 384 wide
            await store.remember(Episode(session_id="s", user_id="alice", input="hi"))

    asyncio.run(remember())
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTORE_")}
    code = "from memstore.cli import main; import sys; raise SystemExit(main(sys.argv[1:]))"
    mcp = [sys.executable, "-c", code, "mcp", "--url", url, "--user-id", "alice"]
    for options, status in ((["--embedder-dim", "64"], 1), ([], 0)):
        done = subprocess.run(
            [*mcp, "--embedder", "hashing", *options],
            env={**env, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,  # the stdio server ends when its input does
        )
        assert done.returncode == status, (options, done.stderr)
        if status:
            assert done.stderr.strip().startswith("memstore mcp: DimensionMismatch: "), done.stderr
