"""What a long text costs to remember: ``remember_many`` time and word pieces per episode.

Stores up to 80 texts of about 4,000 characters (LoCoMo dev turns joined and cut at
a word: multi-paragraph chat, ~950 word pieces each; the dev set holds 69 of them)
through ``MemoryStore.remember_many`` on a temporary SQLite file with three
embedders: as shipped; ``whole_text=False`` (the model's cut for the whole-text
vector, passages as shipped); and the truncating one (``whole_text=False,
passage_tokens=None``: the model reads the first 254 word pieces and nothing else).
They are interleaved ``--repeats`` times in one run; the median time of each and its
ratio to the truncating one are printed. Then what each sends to the model is
counted: every text the model's ``encode`` receives is tokenized (as the model
truncates it) and its word pieces summed, per episode.

    python scripts/measure_long_cost.py --repeats 3
    python scripts/measure_long_cost.py --code /tmp/older-tree   # another tree's embedder
    python scripts/measure_long_cost.py --baseline /tmp/older-tree  # + its cut+passages

``--baseline DIR`` adds, in the same run, the ``whole_text=False`` embedder of another
source tree (its ``memstore/embeddings/sentence.py``): the issue measured its 1.8x
against that embedder of the release before, whose passages overlapped by half.

Absolute times drift on a shared machine; read the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = "../shared/data/locomo-dev.json"


def long_texts(path: Path, count: int, chars: int) -> list[str]:
    """``count`` texts of about ``chars`` characters from the turns of LoCoMo, in order."""
    data = json.loads(path.read_text())
    words: list[str] = []
    for sample in data:
        conversation = sample["conversation"]
        n = 1
        while f"session_{n}" in conversation:
            for turn in conversation[f"session_{n}"]:
                words.extend(f"{turn['speaker']}: {turn['text']}".split())
            n += 1
    texts: list[str] = []
    current: list[str] = []
    size = 0
    for word in words:
        current.append(word)
        size += len(word) + 1
        if size >= chars:
            texts.append(" ".join(current))
            current, size = [], 0
            if len(texts) == count:
                break
    return texts


@contextmanager
def counting_pieces() -> Iterator[list[int]]:
    """Word pieces of every text the model's ``encode`` receives, as the model truncates them."""
    from sentence_transformers import SentenceTransformer

    counts: list[int] = []
    original = SentenceTransformer.encode

    def encode(self: Any, sentences: Any, *args: Any, **kwargs: Any) -> Any:
        batch = [sentences] if isinstance(sentences, str) else list(sentences)
        ids = self.tokenizer(batch, add_special_tokens=False, verbose=False)["input_ids"]
        counts.extend(min(len(i), int(self.max_seq_length) - 2) for i in ids)
        return original(self, sentences, *args, **kwargs)

    SentenceTransformer.encode = encode  # type: ignore[method-assign,assignment]
    try:
        yield counts
    finally:
        SentenceTransformer.encode = original  # type: ignore[method-assign]


async def remember_all(store: Any, texts: list[str], tenant: str) -> float:
    from memstore import Episode

    episodes = [
        Episode(session_id="s", user_id=tenant, input=t, occurred_at=datetime.now(UTC))
        for t in texts
    ]
    started = time.perf_counter()
    await store.remember_many(episodes)
    return time.perf_counter() - started


def _baseline(tree: Path) -> Any:
    """Another tree's sentence-transformers embedder module, loaded beside this one."""
    import importlib.util

    path = tree.resolve() / "memstore" / "embeddings" / "sentence.py"
    spec = importlib.util.spec_from_file_location("baseline_sentence", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"no embedder at {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def run(args: argparse.Namespace) -> None:
    from memstore import MemoryStore
    from memstore.embeddings import SentenceTransformerEmbedder

    texts = args.texts
    embedders = {
        "shipped": SentenceTransformerEmbedder(),
        # The baseline: the model's cut for the whole-text vector, passages on.
        "cut+passages": SentenceTransformerEmbedder(whole_text=False),
        "truncating": SentenceTransformerEmbedder(whole_text=False, passage_tokens=None),
    }
    if args.baseline:
        embedders["base cut+pass"] = _baseline(Path(args.baseline)).SentenceTransformerEmbedder(
            whole_text=False
        )
    times: dict[str, list[float]] = {name: [] for name in embedders}
    pieces: dict[str, list[int]] = {}
    root = Path(tempfile.mkdtemp(prefix="long-cost-"))
    for embedder in embedders.values():  # warm up: the first batch
        embedder.embed_sync(texts[:2])
    for repeat in range(args.repeats):
        for name, embedder in embedders.items():
            url = f"sqlite+aiosqlite:///{root}/{name}-{repeat}.db"
            async with MemoryStore.open(url, embedder=embedder, auto_migrate=True) as store:
                times[name].append(await remember_all(store, texts, "timing"))
    for name, embedder in embedders.items():
        with counting_pieces() as counts:
            url = f"sqlite+aiosqlite:///{root}/{name}-count.db"
            async with MemoryStore.open(url, embedder=embedder, auto_migrate=True) as store:
                await remember_all(store, texts, "count")
        pieces[name] = counts
    whole = sum(pieces["truncating"]) / len(texts)
    print(f"{len(texts)} texts, median {statistics.median(map(len, texts)):.0f} characters")
    print(f"{'embedder':<14}{'median s':>10}{'ratio':>8}{'pieces/episode':>16}{'encoded':>9}")
    print("(ratio: median time / the truncating embedder's)")
    base = statistics.median(times["truncating"])
    for name in embedders:
        median = statistics.median(times[name])
        sent = sum(pieces[name]) / len(texts)
        print(
            f"{name:<14}{median:>10.2f}{median / base:>8.2f}{sent:>16.0f}"
            f"{len(pieces[name]) / len(texts):>9.1f}"
        )
    from sentence_transformers import SentenceTransformer

    from memstore.embeddings.sentence import bundled_minilm_path

    tokenizer = SentenceTransformer(str(bundled_minilm_path()), device="cpu").tokenizer
    ids = tokenizer(texts, add_special_tokens=False, verbose=False)["input_ids"]
    length = sum(map(len, ids)) / len(texts)
    shipped = sum(pieces["shipped"]) / len(texts)
    print(
        f"word pieces per text: {length:.0f}; the shipped embedder sends {shipped / length:.2f}x "
        f"of them, the truncating one {whole / length:.2f}x"
    )
    if "base cut+pass" in times:
        ratio = statistics.median(times["shipped"]) / statistics.median(times["base cut+pass"])
        print(f"shipped / baseline's whole_text=False (time): {ratio:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("data", nargs="?", default=DEFAULT_DATA)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--count", type=int, default=80)
    parser.add_argument("--chars", type=int, default=4000)
    parser.add_argument("--code", help="import memstore from this source tree")
    parser.add_argument("--baseline", help="also time this tree's whole_text=False embedder")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(args.code).resolve() if args.code else REPO))
    data = Path(args.data)
    args.texts = long_texts(data if data.exists() else REPO / args.data, args.count, args.chars)
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
