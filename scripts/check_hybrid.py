"""Hybrid recall against its own parts, per set: ``store.recall`` R@k beside each part alone.

For every set given (LoCoMo-format JSON, categories 1-4; or a long-chat set of
scripts/build_longchat.py) the messages are stored once, one tenant per
conversation, and every question is asked four ways over the same stored rows:

- ``bm25``: plain Okapi BM25 over the same texts (scripts/eval_longchat.py's baseline);
- ``dense``: ``store.recall`` with keyword, neighbour and session weights 0: cosine
  top-k of the stored vectors (a long message by its best passage, as recall scores it);
- ``keyword``: ``store.recall`` with dense, neighbour and session weights 0: the
  store's own BM25 side;
- ``hybrid``: ``store.recall`` as shipped.

The last line per set compares hybrid R@10 with max(bm25, dense) and says ``ok`` or
``BELOW``; the exit status is 1 if any set is below.

    python scripts/check_hybrid.py /work/shared/data/locomo-dev.json /tmp/longchat.json \\
        --cache /tmp/vec [--url postgresql+asyncpg://...]

``--cache DIR`` keeps MiniLM vectors per text (scripts/eval_longchat.py's cache), so
each set is embedded once and later runs replay it. ``--diagnose N`` also lists, per
set, the evidence plain BM25 ranks in its top 10 and the store's keyword side does not
(and the count the other way), with lengths against the tenant's median: up to N lines.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from eval_locomo import episodes_of, norm_id, tenant_of  # noqa: E402
from eval_longchat import ID_NAMESPACE, _date, bm25_rank, make_embedder  # noqa: E402

from memstore import Episode, MemoryStore  # noqa: E402
from memstore.recall import RecallTuning  # noqa: E402
from memstore.schema.migrate import upgrade  # noqa: E402

KS = (1, 5, 10)
MAIN = {"1", "2", "3", "4"}
_SHIPPED = RecallTuning()
WAYS: dict[str, RecallTuning] = {
    "dense": replace(_SHIPPED, keyword_weight=0.0, neighbour_weight=0.0, session_weight=0.0),
    "keyword": replace(_SHIPPED, dense_weight=0.0, neighbour_weight=0.0, session_weight=0.0),
    "hybrid": _SHIPPED,
}


@dataclass(frozen=True)
class Question:
    tenant: str
    text: str
    evidence: frozenset[str]  # message keys (metadata "key")


@dataclass(frozen=True)
class Corpus:
    name: str
    episodes: dict[str, list[Episode]]  # by tenant, metadata "key" on each
    questions: list[Question]


def _keyed(episode: Episode, key: str) -> Episode:
    return replace(episode, metadata={**episode.metadata, "key": key})


def load_set(path: Path) -> Corpus:
    """A LoCoMo file (a list of conversations) or a long-chat set (messages, questions)."""
    raw = json.loads(path.read_text())
    if isinstance(raw, list):
        episodes: dict[str, list[Episode]] = {}
        questions: list[Question] = []
        for index, sample in enumerate(raw):
            tenant = tenant_of(sample, index)
            turns = episodes_of(sample["conversation"], tenant)
            episodes[tenant] = [_keyed(e, str(e.metadata["dia_id"])) for e in turns]
            for qa in sample["qa"]:
                evidence = frozenset(e for e in map(norm_id, qa.get("evidence") or []) if e)
                if evidence and str(qa.get("category")) in MAIN:
                    questions.append(Question(tenant, qa["question"], evidence))
        return Corpus(path.name, episodes, questions)
    tenant = "longchat"
    chat = [
        Episode(
            session_id=m["session"],
            user_id=tenant,
            input=m["content"] if m["role"] == "user" else "",
            output=m["content"] if m["role"] != "user" else "",
            metadata={"key": m["id"]},
            occurred_at=_date(m["date"]),
            id=str(uuid.uuid5(ID_NAMESPACE, m["id"])),
        )
        for m in raw["messages"]
    ]
    asked = [Question(tenant, q["question"], frozenset(q["evidence"])) for q in raw["questions"]]
    return Corpus(path.name, {tenant: chat}, asked)


def _text(episode: Episode) -> str:
    return "\n".join(part for part in (episode.input, episode.output) if part)


def _recall(evidence: frozenset[str], ranked: Sequence[Any]) -> dict[int, float]:
    return {k: len(evidence & set(ranked[:k])) / len(evidence) for k in KS}


Rankings = dict[str, list[list[str]]]  # per way, per question (corpus order), top keys


async def measure(
    corpus: Corpus, url: str, embedder: Any
) -> tuple[dict[str, dict[int, float]], Rankings]:
    """Mean R@k per way of asking, over the corpus' questions, and each way's rankings."""
    lists: dict[str, list[dict[int, float]]] = {w: [] for w in ("bm25", *WAYS)}
    tops: Rankings = {w: [] for w in ("bm25", *WAYS)}
    await upgrade(url)
    async with MemoryStore.open(url, embedder=embedder) as store:
        for tenant, episodes in corpus.episodes.items():
            await store.forget(user_id=tenant)
            for start in range(0, len(episodes), 500):
                await store.remember_many(episodes[start : start + 500])
    for tenant, episodes in corpus.episodes.items():
        mine = [q for q in corpus.questions if q.tenant == tenant]
        docs = [{"id": e.metadata["key"], "content": _text(e)} for e in episodes]
        for q, top in zip(mine, bm25_rank(docs, [q.text for q in mine], max(KS)), strict=True):
            lists["bm25"].append(_recall(q.evidence, top))
            tops["bm25"].append(top)
    for way, tuning in WAYS.items():
        async with MemoryStore.open(url, embedder=embedder, recall_tuning=tuning) as store:
            for q in corpus.questions:
                found = await store.recall(q.text, user_id=q.tenant, limit=max(KS))
                keys = [str(e.metadata.get("key")) for e in found]
                lists[way].append(_recall(q.evidence, keys))
                tops[way].append(keys)
    async with MemoryStore.open(url, embedder=embedder) as store:
        for tenant in corpus.episodes:
            await store.forget(user_id=tenant)
    means = {w: {k: sum(r[k] for r in rs) / len(rs) for k in KS} for w, rs in lists.items()}
    # bm25_rank asks each tenant's questions together: put its lists in corpus order
    order = [q for t in corpus.episodes for q in corpus.questions if q.tenant == t]
    by_question = dict(zip(map(id, order), tops["bm25"], strict=True))
    tops["bm25"] = [by_question[id(q)] for q in corpus.questions]
    return means, tops


def diagnose(corpus: Corpus, tops: Rankings, lines: int) -> None:
    """Evidence plain BM25 ranks at <= 10 that the store's keyword side does not, and why
    it might be: its length and the length of the rows ranked above it, each against the
    tenant's median."""
    length = {
        (t, str(e.metadata["key"])): len(_text(e))
        for t, eps in corpus.episodes.items()
        for e in eps
    }
    median = {
        t: statistics.median_low(len(_text(e)) for e in eps) or 1
        for t, eps in corpus.episodes.items()
    }
    missed, found = [], 0
    for i, q in enumerate(corpus.questions):
        bm25, keyword = tops["bm25"][i][:10], tops["keyword"][i][:10]
        found += len([e for e in q.evidence if e in keyword and e not in bm25])
        missed += [(q, e, keyword) for e in sorted(q.evidence) if e in bm25 and e not in keyword]
    print(f"  evidence in bm25's top 10, not keyword's: {len(missed)}; the other way: {found}")
    if not missed:
        return
    share = [length[(q.tenant, e)] / median[q.tenant] for q, e, _ in missed]
    above = [length[(q.tenant, k)] / median[q.tenant] for q, _, top in missed for k in top]
    print(
        f"  their length / tenant median: median {statistics.median(share):.2f}; "
        f"keyword's top 10 above them: median {statistics.median(above):.2f}"
    )
    for q, e, top in missed[:lines]:
        rows = " ".join(f"{length[(q.tenant, k)]}" for k in top)
        print(f"  - {q.text[:60]!r} evidence {e} {length[(q.tenant, e)]} chars; above: {rows}")


async def run(args: argparse.Namespace) -> bool:
    embedder = make_embedder("minilm", Path(args.cache) if args.cache else None)
    ok = True
    for path in args.sets:
        corpus = load_set(Path(path))
        url = args.url or f"sqlite+aiosqlite:///{tempfile.mkdtemp(prefix='hybrid-')}/m.db"
        result, tops = await measure(corpus, url, embedder)
        if hasattr(embedder, "save"):
            embedder.save()
        messages = sum(len(e) for e in corpus.episodes.values())
        print(f"{corpus.name}: {len(corpus.questions)} questions, {messages} messages")
        print(f"  {'':<8}" + "".join(f"{'R@' + str(k):>8}" for k in KS))
        for way, by_k in result.items():
            print(f"  {way:<8}" + "".join(f"{by_k[k]:>8.3f}" for k in KS))
        parts = max(result["bm25"][10], result["dense"][10])
        margin = result["hybrid"][10] - parts
        verdict = "ok" if margin >= 0 else "BELOW"
        print(f"  hybrid R@10 - max(bm25, dense) = {margin:+.3f}  {verdict}")
        ok = ok and margin >= 0
        if args.diagnose:
            diagnose(corpus, tops, args.diagnose)
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("sets", nargs="+", help="LoCoMo JSON or scripts/build_longchat.py output")
    parser.add_argument("--url", help="database URL (default: a temporary SQLite file per set)")
    parser.add_argument("--cache", help="directory of cached vectors (scripts/eval_longchat.py)")
    parser.add_argument(
        "--diagnose",
        type=int,
        default=0,
        metavar="N",
        help="list N evidence bm25 finds, keyword not",
    )
    args = parser.parse_args()
    sys.exit(0 if asyncio.run(run(args)) else 1)


if __name__ == "__main__":
    main()
