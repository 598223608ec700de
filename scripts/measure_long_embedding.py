"""What embedding long texts whole costs: MiniLM time, whole text against the model's cut.

Embeds the LoCoMo dev texts twice with ``SentenceTransformerEmbedder``, once as it
ships (a text past the model's window is the mean of overlapping windows) and once
with ``whole_text=False`` (the model truncates), interleaving the two several times
and reporting the median of each and their ratio, for

- turns: one text per dialogue turn (short; only the extra tokenizer pass differs);
- sessions: one text per session (600-800 word pieces, 2-6 windows each).

    python scripts/measure_long_embedding.py --repeats 3

Absolute times drift on a shared machine; read the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from eval_locomo import DEFAULT_DATA, episodes_of, load, tenant_of  # noqa: E402

from memstore.core.documents import episode_text  # noqa: E402


def texts_of(path: str, granularity: str) -> list[str]:
    texts: list[str] = []
    for index, sample in enumerate(load(path)):
        episodes = episodes_of(sample["conversation"], tenant_of(sample, index), granularity)
        texts.extend(episode_text(e) for e in episodes)
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("data", nargs="?", default=DEFAULT_DATA)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from memstore.embeddings import SentenceTransformerEmbedder

    embedders = {
        "whole text": SentenceTransformerEmbedder(),
        "truncated": SentenceTransformerEmbedder(whole_text=False),
    }
    print(f"{'texts':<10}{'n':>6}{'whole text s':>14}{'truncated s':>13}{'ratio':>8}")
    for granularity in ("turn", "session"):
        texts = texts_of(args.data, granularity)
        times: dict[str, list[float]] = {name: [] for name in embedders}
        for _ in range(args.repeats):
            for name, embedder in embedders.items():
                started = time.perf_counter()
                embedder.embed_sync(texts)
                times[name].append(time.perf_counter() - started)
        whole, cut = (statistics.median(times[name]) for name in embedders)
        print(f"{granularity:<10}{len(texts):>6}{whole:>14.2f}{cut:>13.2f}{whole / cut:>8.2f}")


if __name__ == "__main__":
    main()
