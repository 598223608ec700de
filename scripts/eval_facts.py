"""Facts measured: what consolidation extracts from LoCoMo, against its gold observations.

Each LoCoMo conversation is stored one episode a turn (as ``memstore eval`` stores it)
and consolidated with the extractor; then, by the evidence-turn rule
(memstore.evaluation.facts): **coverage** is the share of gold ``observation`` entries
whose evidence turn is a source of some fact, **precision** the share of facts one of
whose source turns is the evidence of some gold observation; and every question with
evidence is asked through ``recall_facts``: recall@k is the share of its evidence turns
among the sources of the first k facts (95 % bootstrap intervals).

    python scripts/eval_facts.py                               # rules, temp SQLite
    python scripts/eval_facts.py --category 1 2 3 4            # LoCoMo's main categories
    python scripts/eval_facts.py --extractor llm --llm-url http://127.0.0.1:8080/v1 \\
        --llm-model qwen2.5-7b-instruct                         # an OpenAI-compatible endpoint

``--extractor llm`` takes the endpoint options of ``memstore consolidate`` (and its
``MEMSTORE_LLM_*`` environment). The embedder is hashing unless ``--embedder`` names one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from memstore import MemoryStore  # noqa: E402
from memstore.errors import MemstoreError  # noqa: E402
from memstore.evaluation import Dataset, load_dataset  # noqa: E402
from memstore.evaluation.checks import Source  # noqa: E402
from memstore.evaluation.facts import (  # noqa: E402
    FACT_KS,
    Observation,
    gold_observations,
    measure_facts,
)
from memstore.evaluation.progress import stderr_progress  # noqa: E402
from memstore.services.consolidation.types import Extractor  # noqa: E402

DEFAULT_DATA = "../shared/data/locomo-dev.json"


def extractor_of(args: argparse.Namespace) -> Extractor:
    """The extractor ``memstore consolidate`` would build from the same options."""
    if args.extractor == "rules":
        from memstore.services.consolidation.rules import RuleExtractor

        return RuleExtractor()
    from memstore.services.consolidation.llm import LLMConfig, LLMExtractor

    config = LLMConfig.from_env(
        base_url=args.llm_url, model=args.llm_model, timeout=args.llm_timeout
    )
    return LLMExtractor(config)


async def run(args: argparse.Namespace, dataset: Dataset, observations: list[Observation]) -> None:
    extractor = extractor_of(args)
    directory = Path(tempfile.mkdtemp(prefix="memstore-eval-facts-"))
    started = time.perf_counter()
    try:
        url = args.url or f"sqlite+aiosqlite:///{directory / 'facts.db'}"
        bar = stderr_progress(len(dataset.turns) + len(dataset.questions), "facts")
        async with MemoryStore.open(url, embedder=args.embedder) as store:
            report = await measure_facts(store, dataset, observations, extractor, progress=bar)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    elapsed = time.perf_counter() - started
    print(
        f"data: {args.data}   extractor: {extractor.name}   embedder: {args.embedder}   "
        f"questions: {len(dataset.questions)}   time: {elapsed:.0f}s"
    )
    print(f"{'conversation':<14}{'gold obs':>9}{'covered':>9}{'facts':>7}{'precise':>9}")
    for conversation, row in report.per_conversation.items():
        print(
            f"{conversation:<14}{row['observations']:>9}{row['covered']:>9}"
            f"{row['facts']:>7}{row['precise']:>9}"
        )
    print(
        f"coverage {report.coverage:.3f} ({report.covered}/{report.observations})   "
        f"precision {report.precision:.3f} ({report.precise}/{report.facts})"
    )
    cells = "   ".join(
        f"R@{k} {e.mean:.3f} [{e.low:.3f}, {e.high:.3f}]"
        for k, e in zip(FACT_KS, report.recall.values(), strict=True)
    )
    print(f"recall_facts evidence recall: {cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("data", nargs="?", default=DEFAULT_DATA, help="LoCoMo JSON")
    parser.add_argument("--url", help="a scratch database (default: a temporary SQLite file)")
    parser.add_argument("--embedder", default="hashing", help="hashing (default), minilm, ...")
    parser.add_argument("--category", nargs="+", default=[], help="only these categories")
    parser.add_argument("--extractor", choices=("rules", "llm"), default="rules")
    parser.add_argument("--llm-url", help="chat-completions base URL ($MEMSTORE_LLM_BASE_URL)")
    parser.add_argument("--llm-model", help="model name ($MEMSTORE_LLM_MODEL)")
    parser.add_argument("--llm-timeout", type=float, help="seconds per request")
    args = parser.parse_args()
    path = Path(args.data)
    if not path.exists() and not path.is_absolute():
        path = REPO / args.data
    try:
        dataset = load_dataset(path, "locomo", drop_unknown_evidence=True).only(args.category)
        observations = gold_observations(Source(str(path)), json.loads(path.read_text()))
        asyncio.run(run(args, dataset, observations))
    except MemstoreError as error:
        raise SystemExit(f"eval_facts: {type(error).__name__}: {error}") from None


if __name__ == "__main__":
    main()
