"""Time ``pack()`` and the default token counter against an earlier memstore, in one run.

    python scripts/bench_pack.py                  # against git fe8a80f, 7 alternating rounds
    python scripts/bench_pack.py --base main --rounds 11

The packer is pure Python with no database work, so it is measured alone on the
inputs ``context()`` builds: 4 working blocks of 60 words, facts, recalled episodes
(each ``input → output`` under its session's date) and 20 session messages, from the
seeding words of the turn-loop benchmark (scripts/benchlib/words.py), merged by score
as the builder merges them. Two shapes: ``turn`` is one turn of
scripts/bench_turn_loop.py at the default budget (20 facts, 61 recalled episodes of
a 300-turn history), ``large`` a few hundred of each.

"Before" is memstore at ``--base``, exported with ``git archive`` into a temporary
directory (removed after); "after" is this worktree. Each side runs in its own
interpreter, the two alternating for ``--rounds`` rounds, and each figure is the
median over rounds. Both sides pack the same inputs, and the run stops with an error
unless they return the same contexts and the same token counts.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import random
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from benchlib.words import TOPICS, sentence  # noqa: E402

DEFAULT_BASE = "fe8a80f"  # main before pack() and the counter were made cheap
# (shape, episodes in the history, episodes recalled, facts, budgets)
SHAPES: list[tuple[str, int, int, int, tuple[int, ...]]] = [
    ("turn", 300, 61, 20, (500, 2_000, 8_000)),
    ("large", 600, 400, 300, (2_000, 8_000, 32_000)),
]
INPUTS = 5  # different candidate lists per shape (seeds)

T = TypeVar("T")


def candidates(shape: str, history: int, recalled: int, facts: int, seed: int) -> list[Any]:
    """What ``context()`` hands ``pack()``: blocks, the 4 newest messages, the recalled
    facts and episodes merged by score, then the older messages."""
    from memstore.services.agent.builder import block_item, episode_item, fact_item
    from memstore.services.agent.items import ContextItem, ItemKind
    from memstore.services.agent.ranking import merge_by_score
    from memstore.types import Episode, Fact, MemoryBlock

    rng = random.Random(f"{shape}-{seed}")
    start = datetime(2025, 1, 1, tzinfo=UTC)
    blocks = [
        block_item(
            MemoryBlock(
                name=name,
                content=sentence(rng, 60),
                version=1,
                pinned_order=n,
                updated_at=start,
            ),
            order=n,
        )
        for n, name in enumerate(("persona", "goals", "style", "notes"))
    ]
    turns = sorted(rng.sample(range(history), recalled))
    episodes = [
        Episode(
            id=f"e{n}",
            user_id="u",
            session_id=f"u-s{n // 50}",
            input=sentence(rng, rng.randint(8, 30)),
            output=sentence(rng, rng.randint(20, 80)),
            occurred_at=start + timedelta(minutes=10 * n),
        )
        for n in turns
    ]
    rng.shuffle(episodes)
    episode_scores = sorted((rng.random() for _ in episodes), reverse=True)
    episode_items = [
        episode_item(e, order=n, score=s)
        for n, (e, s) in enumerate(zip(episodes, episode_scores, strict=True))
    ]
    fact_scores = sorted((rng.random() for _ in range(facts)), reverse=True)
    fact_items = [
        fact_item(
            Fact(
                user_id="u",
                subject="u",
                predicate=f"pref_{n}",
                object=f"{rng.choice(TOPICS)} {rng.choice(TOPICS)} {n}",
                valid_from=start,
                fact_id=f"f{n}",
            ),
            order=n,
            score=s,
        )
        for n, s in enumerate(fact_scores)
    ]
    messages = [
        ContextItem(
            id=f"episode:m{n}",
            kind=ItemKind.MESSAGE,
            text=sentence(rng, rng.randint(8, 30) if n % 2 == 0 else rng.randint(20, 80)),
            role="user" if n % 2 == 0 else "assistant",
            order=n,
        )
        for n in range(20)
    ]
    newest = list(reversed(messages))
    recalled_items = merge_by_score([fact_items, episode_items], lambda i: i.score or 0.0)
    return blocks + newest[:4] + recalled_items + newest[4:]


def _seconds_each(fn: Callable[[T], object], args: list[T], repeats: int) -> float:
    """Median over ``repeats`` passes of the mean seconds of ``fn(a)`` for ``a`` in ``args``."""
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for arg in args:
            fn(arg)
        samples.append((time.perf_counter() - start) / len(args))
    return statistics.median(samples)


def child(repeats: int) -> dict[str, Any]:
    """One side's figures: ms per pack() call and µs per counted text, by shape and budget,
    and a digest of every result (contexts and counts) to compare the sides by."""
    import memstore
    from memstore.services.agent.context import pack
    from memstore.services.agent.layout import render_items
    from memstore.services.agent.tokens import ApproxTokenCounter

    digest = hashlib.sha256()
    out: dict[str, Any] = {"memstore": memstore.__file__, "pack": {}, "count": {}, "calls": {}}
    counter = ApproxTokenCounter()
    for shape, history, recalled, facts, budgets in SHAPES:
        inputs = [candidates(shape, history, recalled, facts, s) for s in range(INPUTS)]
        texts = [item.text for items in inputs for item in items]
        digest.update(repr([counter.count(t) for t in texts]).encode())
        out["count"][f"{shape} candidates"] = _seconds_each(counter.count, texts, repeats) * 1e6
        for budget in budgets:
            packed = [pack(items, budget) for items in inputs]
            for ctx in packed:
                digest.update(repr((ctx.items, ctx.used_tokens, ctx.dropped)).encode())
            out["pack"][f"{shape} {budget}"] = {
                "ms": _seconds_each(partial(pack, max_tokens=budget), inputs, repeats) * 1e3,
                "candidates": statistics.mean(len(i) for i in inputs),
                "packed": statistics.mean(len(c.items) for c in packed),
            }
            rendered = [render_items(c.items, with_messages=True) for c in packed]
            out["count"][f"{shape} {budget} rendered"] = (
                _seconds_each(counter.count, rendered, repeats) * 1e6
            )
            # A user's tokenizer: how often pack() calls it.
            calls = 0

            def words(text: str) -> int:
                nonlocal calls
                calls += 1
                return len(text.split()) + text.count("\n")

            for items in inputs:
                ctx = pack(items, budget, counter=words)
                digest.update(repr((ctx.items, ctx.used_tokens, ctx.dropped)).encode())
            out["calls"][f"{shape} {budget}"] = calls / INPUTS
    out["digest"] = digest.hexdigest()
    return out


def _export(base: str, into: Path) -> None:
    tar = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", base, "memstore"],
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
        archive.extractall(into, filter="data")


def _run_side(path: Path, repeats: int) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(path))
    proc = subprocess.run(
        [sys.executable, __file__, "--child", "--repeats", str(repeats)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"the side at {path} failed: {proc.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    if not result["memstore"].startswith(str(path)):
        raise SystemExit(f"the side at {path} imported memstore from {result['memstore']}")
    return result


def _median_of(runs: list[dict[str, Any]], part: str, key: str, field: str | None = None) -> float:
    values = [r[part][key] if field is None else r[part][key][field] for r in runs]
    return float(statistics.median(values))


def report(before: list[dict[str, Any]], after: list[dict[str, Any]], base: str) -> None:
    print(f"before: memstore at git {base}; after: {ROOT}")
    print("same contexts and counts on both sides: yes\n")
    print("| input, budget | candidates | packed | before ms/call | after ms/call | after/before |")
    print("|---|---|---|---|---|---|")
    for key in before[0]["pack"]:
        old = _median_of(before, "pack", key, "ms")
        new = _median_of(after, "pack", key, "ms")
        first = after[0]["pack"][key]
        print(
            f"| {key} | {first['candidates']:.0f} | {first['packed']:.0f} "
            f"| {old:.2f} | {new:.2f} | {new / old:.2f}x |"
        )
    print("\n| counted text | before µs/text | after µs/text | after/before |")
    print("|---|---|---|---|")
    for key in before[0]["count"]:
        old = _median_of(before, "count", key)
        new = _median_of(after, "count", key)
        print(f"| {key} | {old:.1f} | {new:.1f} | {new / old:.2f}x |")
    print("\n| input, budget | tokenizer calls per pack(), before | after |")
    print("|---|---|---|")
    for key in before[0]["calls"]:
        print(f"| {key} | {before[0]['calls'][key]:.0f} | {after[0]['calls'][key]:.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default=DEFAULT_BASE, help="git revision of 'before'")
    parser.add_argument("--rounds", type=int, default=7, help="alternating rounds per side")
    parser.add_argument("--repeats", type=int, default=15, help="timed passes per round")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.repeats)))
        return
    with tempfile.TemporaryDirectory(prefix="memstore-pack-base-") as tmp:
        base_dir = Path(tmp)
        _export(args.base, base_dir)
        before: list[dict[str, Any]] = []
        after: list[dict[str, Any]] = []
        for n in range(args.rounds):
            print(f"round {n + 1}/{args.rounds}", file=sys.stderr)
            before.append(_run_side(base_dir, args.repeats))
            after.append(_run_side(ROOT, args.repeats))
    if before[0]["digest"] != after[0]["digest"]:
        raise SystemExit("the two sides packed different contexts or counted differently")
    report(before, after, args.base)


if __name__ == "__main__":
    main()
