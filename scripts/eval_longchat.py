"""Evidence recall on long user-assistant chats (the set of scripts/build_longchat.py).

Every message is one episode of one tenant (its chat session as ``session_id``, the
session's date as ``occurred_at``); every question is asked through
``store.recall(limit=10)``; recall@k is the fraction of the question's evidence
messages in the top k (any@k: at least one). Plain BM25 over the same messages
(Okapi, k1 1.2, b 0.75, lower-cased words) is printed beside it.

    python scripts/eval_longchat.py /tmp/longchat.json                 # temp SQLite
    python scripts/eval_longchat.py /tmp/longchat.json --url postgresql+asyncpg://...
    python scripts/eval_longchat.py /tmp/longchat.json --embedder minilm-truncated

``--embedder``: ``minilm`` (as shipped), ``minilm-truncated`` (the model's own cut,
``whole_text=False, passage_tokens=None``), ``minilm-no-passages`` (whole-text vector
only) or ``minilm-overlap`` (the earlier embedder: whole text as the mean of
half-overlapping 254-piece windows, half-overlapping 128-piece passages).

``--cache DIR`` keeps each embedder's vectors per text on disk, and ``--code DIR``
imports memstore from another source tree (an older commit checked out with ``git
archive``), so one set of vectors can be replayed through each commit's recall: how
the regression hunt in docs/RECALL.md bisected the recall code apart from the model.
Any other ``--embedder`` name is the shipped embedder, cached under that name.
``--margin M`` asks through ``RecallTuning(passage_margin=M)``.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import pickle
import re
import sys
import tempfile
import uuid
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
ID_NAMESPACE = uuid.UUID("0c3f4a8e-62d2-4c47-9a57-1b8f3e0d9a21")
TENANT = "longchat"
KS = (1, 5, 10)
_WORD = re.compile(r"\w+")


def _date(raw: str) -> datetime:
    return datetime.strptime(raw.split(" (")[0] + raw[-6:], "%Y/%m/%d %H:%M").replace(tzinfo=UTC)


def bm25_rank(
    messages: Sequence[dict[str, Any]], queries: Sequence[str], k: int
) -> list[list[str]]:
    """The top ``k`` message ids per query by plain Okapi BM25 (an independent baseline)."""
    docs = [Counter(_WORD.findall(m["content"].lower())) for m in messages]
    lengths = [sum(d.values()) for d in docs]
    avg = sum(lengths) / len(lengths)
    df: Counter[str] = Counter()
    for d in docs:
        df.update(d.keys())
    n = len(docs)
    out = []
    for query in queries:
        terms = set(_WORD.findall(query.lower()))
        scores = []
        for d, length in zip(docs, lengths, strict=True):
            s = 0.0
            for t in terms:
                f = d.get(t)
                if f:
                    idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                    s += idf * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * length / avg))
            scores.append(s)
        best = sorted(range(n), key=lambda i: -scores[i])[:k]
        out.append([messages[i]["id"] for i in best])
    return out


class CachedEmbedder:
    """MiniLM vectors per text, kept on disk by embedder mode (``--cache``)."""

    identity = "sentence-transformers:all-MiniLM-L6-v2"
    dim = 384

    def __init__(self, mode: str, cache: Path | None) -> None:
        self.mode = mode
        self.path = None if cache is None else cache / f"{mode}.pkl"
        self.store: dict[str, Any] = {}
        if self.path is not None and self.path.exists():
            self.store = pickle.loads(self.path.read_bytes())
        self._inner: Any = None

    def inner(self) -> Any:
        if self._inner is None:
            from memstore.embeddings import SentenceTransformerEmbedder

            variants: dict[str, dict[str, Any]] = {
                "minilm-truncated": {"whole_text": False, "passage_tokens": None},
                "minilm-no-passages": {"passage_tokens": None},
            }
            options = variants.get(self.mode, {})
            self._inner = SentenceTransformerEmbedder(**options)
        return self._inner

    def _fill(self, kind: str, texts: Sequence[str]) -> list[Any]:
        keys = [f"{kind}:{hashlib.sha1(t.encode()).hexdigest()}" for t in texts]
        missing = [i for i, key in enumerate(keys) if key not in self.store]
        if missing:
            todo = [texts[i] for i in missing]
            inner = self.inner()
            found = inner.embed_sync(todo) if kind == "w" else inner.embed_passages_sync(todo)
            for i, vector in zip(missing, found, strict=True):
                self.store[keys[i]] = vector
        return [self.store[key] for key in keys]

    async def embed(self, texts: Sequence[str]) -> Any:
        import numpy as np

        return np.asarray(self._fill("w", texts))

    def save(self) -> None:
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_bytes(pickle.dumps(self.store))


class CachedPassageEmbedder(CachedEmbedder):
    async def embed_passages(self, texts: Sequence[str]) -> list[Any]:
        return self._fill("p", texts)


def make_embedder(name: str, cache: Path | None) -> Any:
    if cache is None:
        from memstore.embeddings import SentenceTransformerEmbedder

        if name == "minilm-truncated":
            return SentenceTransformerEmbedder(whole_text=False, passage_tokens=None)
        if name == "minilm-no-passages":
            return SentenceTransformerEmbedder(passage_tokens=None)
        return SentenceTransformerEmbedder()
    kind = CachedEmbedder if name in ("minilm-truncated", "minilm-no-passages") else None
    return (kind or CachedPassageEmbedder)(name, cache)


async def run(args: argparse.Namespace, data: dict[str, Any]) -> dict[str, float]:
    from memstore import Episode, MemoryStore

    messages, questions = data["messages"], data["questions"]
    embedder = make_embedder(args.embedder, Path(args.cache) if args.cache else None)
    url = args.url or f"sqlite+aiosqlite:///{tempfile.mkdtemp(prefix='longchat-')}/m.db"
    from memstore.search.tuning import RecallTuning

    tuning = None if args.margin is None else RecallTuning(passage_margin=args.margin)
    async with MemoryStore.open(
        url, embedder=embedder, auto_migrate=True, recall_tuning=tuning
    ) as store:
        await store.forget(user_id=TENANT)
        episodes = [
            Episode(
                session_id=m["session"],
                user_id=TENANT,
                input=m["content"] if m["role"] == "user" else "",
                output=m["content"] if m["role"] != "user" else "",
                metadata={"mid": m["id"]},
                occurred_at=_date(m["date"]),
                id=str(uuid.uuid5(ID_NAMESPACE, m["id"])),
            )
            for m in messages
        ]
        for start in range(0, len(episodes), 500):
            await store.remember_many(episodes[start : start + 500])
        ranked = []
        for q in questions:
            found = await store.recall(q["question"], user_id=TENANT, limit=max(KS))
            ranked.append([e.metadata.get("mid") for e in found])
        await store.forget(user_id=TENANT)
    if hasattr(embedder, "save"):
        embedder.save()
    baseline = bm25_rank(messages, [q["question"] for q in questions], max(KS))
    out: dict[str, float] = {}
    runs: list[tuple[str, list[list[Any]]]] = [("store", ranked), ("bm25", baseline)]
    for name, lists in runs:
        for k in KS:
            fractions, anys = [], []
            for q, top in zip(questions, lists, strict=True):
                hit = set(q["evidence"]) & set(top[:k])
                fractions.append(len(hit) / len(q["evidence"]))
                anys.append(1.0 if hit else 0.0)
            out[f"{name} R@{k}"] = sum(fractions) / len(fractions)
            out[f"{name} any@{k}"] = sum(anys) / len(anys)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("data")
    parser.add_argument("--url")
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--cache", help="directory of cached vectors per embedder mode")
    parser.add_argument("--code", help="import memstore from this source tree")
    parser.add_argument("--label", default="")
    parser.add_argument(
        "--margin", type=float, help="RecallTuning.passage_margin (default: as shipped)"
    )
    args = parser.parse_args()
    sys.path.insert(0, str(Path(args.code).resolve() if args.code else REPO))
    data = json.loads(Path(args.data).read_text())
    result = asyncio.run(run(args, data))
    print(
        f"{args.label or args.embedder}: {len(data['questions'])} questions, "
        f"{len(data['messages'])} messages"
    )
    print("  " + "  ".join(f"{k} {v:.3f}" for k, v in result.items()))


if __name__ == "__main__":
    main()
