"""``memstore eval`` end to end: every format on its private temporary database (removed,
nothing written beside the outputs asked for), one-line failures, and ``--url`` on an
existing database of both backends only with ``--allow-existing``."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from memstore import Episode, MemoryStore
from memstore.cli import main
from tests.conftest import is_postgres
from tests.eval_samples import jsonl_lines, locomo_sample, longmemeval_items, write

ROOT = Path(__file__).resolve().parents[1]
SVG = "{http://www.w3.org/2000/svg}"


def _eval(
    *args: str, cwd: Path, tmp: Path, url: str | None = None
) -> subprocess.CompletedProcess[str]:
    """The command in a subprocess whose temporary directory is ``tmp`` (to see what it
    leaves there) and whose cwd is ``cwd`` (where ./memstore.db would be); ``url`` is
    $MEMSTORE_URL, the user's own database."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTORE_")}
    env.update(PYTHONPATH=str(ROOT), TMPDIR=str(tmp))
    if url is not None:
        env["MEMSTORE_URL"] = url
    code = f"from memstore.cli import main\nraise SystemExit(main({['eval', *args]!r}))\n"
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def _dirs(tmp_path: Path) -> tuple[Path, Path]:
    work, tmp = tmp_path / "work", tmp_path / "tmp"
    work.mkdir()
    tmp.mkdir()
    return work, tmp


def _longmemeval() -> list[dict[str, Any]]:
    items = longmemeval_items()
    items[0]["haystack_sessions"][0][0]["has_answer"] = True
    return items


FILES = {
    "locomo": ("data.json", locomo_sample, 2),
    "longmemeval": ("data.json", _longmemeval, 1),
    "jsonl": ("data.jsonl", jsonl_lines, 3),
}


@pytest.mark.sqlite
@pytest.mark.parametrize("kind", sorted(FILES))
def test_each_format_runs_on_a_removed_temporary_database(kind: str, tmp_path: Path) -> None:
    work, tmp = _dirs(tmp_path)
    name, content, questions = FILES[kind]
    write(work / name, content())
    done = _eval(
        name, "--config", "base=hashing", "--config", "narrow=hashing,dim=128",
        "--budgets", "200", "1000", "--json", "out.json", "--svg", "out.svg",
        cwd=work, tmp=tmp, url=f"sqlite:///{work / 'production.db'}",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # Only the file read and the outputs asked for ($MEMSTORE_URL's database is not
    # created, nor ./memstore.db); the temporary directory is gone.
    assert sorted(p.name for p in work.iterdir()) == sorted([name, "out.json", "out.svg"])
    assert list(tmp.iterdir()) == []
    report = json.loads((work / "out.json").read_text())
    assert report["dataset"]["format"] == kind
    assert report["dataset"]["questions"] == questions
    assert report["backend"] == "sqlite" and report["budgets"] == [200, 1000]
    names = [c["name"] for c in report["configurations"]]
    assert names == ["base", "narrow"]
    for config in report["configurations"]:
        overall = config["overall"]
        assert overall["n"] == questions and len(config["curve"]) == 10
        for metric in ("recall@1", "recall@5", "recall@10", "context@200", "context@1000"):
            figure = overall[metric]
            assert 0 <= figure["low"] <= figure["mean"] <= figure["high"] <= 1, metric
    assert "| base |" in done.stdout and "| narrow |" in done.stdout
    assert "base:" in done.stderr  # the progress, on stderr
    series = ET.parse(work / "out.svg").getroot().findall(f"{SVG}polyline[@class='series']")
    assert [s.get("data-config") for s in series] == names


@pytest.mark.sqlite
def test_an_exact_match_is_found_first_interval_one_one(tmp_path: Path) -> None:
    work, tmp = _dirs(tmp_path)
    lines: list[dict[str, Any]] = []
    for i, word in enumerate(["violin", "harbour", "saffron"]):
        text = f"the {word} story"
        lines.append({"type": "turn", "id": "t", "conversation": f"c{i}", "text": text})
        lines.append(
            {"type": "question", "question": text, "evidence": ["t"], "conversation": f"c{i}"}
        )
    write(work / "q.jsonl", lines)
    done = _eval("q.jsonl", "--json", "out.json", "--quiet", cwd=work, tmp=tmp)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    overall = json.loads((work / "out.json").read_text())["configurations"][0]["overall"]
    assert overall["recall@1"] == {"mean": 1.0, "low": 1.0, "high": 1.0}
    assert "| hashing | 3 | 1.000 [1.000, 1.000] |" in done.stdout


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("memstore eval: "), done.stderr
    return lines[0]


BAD_CALLS = {
    "missing-file": (["nowhere.json"], "InvalidEvaluationData: nowhere.json: no such file"),
    "not-json": (["bad.json"], "InvalidEvaluationData: bad.json: not JSON"),
    "unknown-evidence": (
        ["unknown.jsonl"],
        "InvalidEvaluationData: unknown.jsonl: line 2: evidence 'zz' names no turn",
    ),
    "bad-config": (["ok.jsonl", "--config", "x=hashing,colour=red"], "unknown key 'colour'"),
    "url-without-allow": (["ok.jsonl", "--url", "sqlite:///x.db"], "add --allow-existing"),
    "embedder-and-config": (
        ["ok.jsonl", "--embedder", "hashing", "--config", "hashing"],
        "put the embedder in each --config",
    ),
}


@pytest.mark.sqlite
@pytest.mark.parametrize("case", sorted(BAD_CALLS))
def test_bad_input_is_one_line_and_leaves_nothing(case: str, tmp_path: Path) -> None:
    work, tmp = _dirs(tmp_path)
    (work / "bad.json").write_text("[{")
    write(work / "ok.jsonl", jsonl_lines())
    turn = {"type": "turn", "id": "t1", "text": "hello"}
    write(work / "unknown.jsonl", [turn, {"type": "question", "question": "q", "evidence": ["zz"]}])
    before = sorted(p.name for p in work.iterdir())
    args, expected = BAD_CALLS[case]
    line = _one_line(_eval(*args, cwd=work, tmp=tmp))
    assert expected in line, line
    assert sorted(p.name for p in work.iterdir()) == before
    assert list(tmp.iterdir()) == []


async def _episodes(url: str, user_id: str) -> list[Episode]:
    async with MemoryStore.open(url) as store:
        return await store.recall("", user_id=user_id, limit=100)


def test_url_writes_only_its_tenants_and_forgets_them(
    db_url: str, backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async def seed() -> None:
        async with MemoryStore.open(db_url) as store:
            await store.remember(Episode(user_id="alice", session_id="s", input="my own data"))

    asyncio.run(seed())
    data = write(tmp_path / "d.jsonl", jsonl_lines())
    out = tmp_path / "out.json"
    code = main(
        ["eval", str(data), "--url", db_url, "--allow-existing", "--json", str(out), "--quiet"]
    )
    assert code == 0, capsys.readouterr().err
    report = json.loads(out.read_text())
    assert report["backend"] == ("postgresql" if is_postgres(backend) else "sqlite")
    assert report["configurations"][0]["overall"]["n"] == 3
    assert [e.input for e in asyncio.run(_episodes(db_url, "alice"))] == ["my own data"]
    for tenant in ("memstore-eval-0", "memstore-eval-1"):
        assert asyncio.run(_episodes(db_url, tenant)) == []


def test_url_refuses_configurations_of_several_embedders(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write(tmp_path / "d.jsonl", jsonl_lines())
    args = ["eval", str(data), "--url", db_url, "--allow-existing", "--quiet"]
    code = main([*args, "--config", "a=hashing", "--config", "b=hashing,dim=128"])
    err = capsys.readouterr().err
    assert code == 1 and "every configuration must use the database's one embedder" in err
    assert asyncio.run(_episodes(db_url, "memstore-eval-0")) == []
