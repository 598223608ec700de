"""What consolidation extracts, measured against LoCoMo's gold observations.

LoCoMo samples carry ``observation``: per session and speaker, gold statements each
with the evidence turn(s) it was read from. The conversation is stored one episode a
turn and consolidated; a fact's ``sources`` (episode ids) name its turns. By the
evidence-turn rule, a gold observation is **covered** when some fact's sources include
one of its evidence turns, and a fact is **precise** when its sources include an
evidence turn of some gold observation. The questions are then asked through
``recall_facts``: recall@k is the share of a question's evidence turns among the
sources of the first k facts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memstore.evaluation.checks import Source
from memstore.evaluation.dataset import Dataset
from memstore.evaluation.locomo import norm_id, tenant_of
from memstore.evaluation.metrics import Estimate, bootstrap, evidence_share
from memstore.evaluation.progress import Progress
from memstore.evaluation.runner import episodes_of, tenant_name
from memstore.services.consolidation.types import Extractor
from memstore.store import MemoryStore

__all__ = ["FactsReport", "Observation", "gold_observations", "measure_facts"]

FACT_KS = (1, 5, 10)


@dataclass(frozen=True)
class Observation:
    conversation: str
    text: str
    evidence: tuple[str, ...]


@dataclass
class FactsReport:
    """Counts per conversation, and the figures over all of them."""

    observations: int
    covered: int
    facts: int
    precise: int
    recall: dict[str, Estimate]
    per_conversation: dict[str, dict[str, int]]

    @property
    def coverage(self) -> float:
        return self.covered / self.observations if self.observations else float("nan")

    @property
    def precision(self) -> float:
        return self.precise / self.facts if self.facts else float("nan")


def gold_observations(source: Source, data: Any) -> list[Observation]:
    """The ``observation`` entries of a parsed LoCoMo file (each ``[text, evidence]``,
    the evidence one ``dia_id`` or a list of them)."""
    out: list[Observation] = []
    if not isinstance(data, list):
        source.fail(None, "a LoCoMo file is a JSON list of samples")
    for index, sample in enumerate(data):
        conversation = tenant_of(sample, index)
        where = f"sample {index} ({conversation})"
        sessions = source.field(sample, "observation", dict, where)
        for session in sessions:
            for speaker, items in source.field(sessions, session, dict, where).items():
                for i, item in enumerate(items):
                    at = f"{where}, observation {session}/{speaker}/{i}"
                    if not isinstance(item, list) or len(item) != 2:
                        source.fail(at, "expected [text, evidence]")
                    text, raw = item
                    ids = [raw] if isinstance(raw, str) else raw
                    if not isinstance(text, str) or not all(isinstance(e, str) for e in ids):
                        source.fail(at, "expected [text, evidence]")
                    evidence = tuple(norm_id(e) or e for e in ids)
                    out.append(Observation(conversation, text, evidence))
    return out


async def measure_facts(
    store: MemoryStore,
    dataset: Dataset,
    observations: Sequence[Observation],
    extractor: Extractor,
    *,
    progress: Progress | None = None,
    seed: int = 0,
) -> FactsReport:
    """Store and consolidate every conversation of ``dataset`` (a LoCoMo one), then
    compare the facts with ``observations`` and ask the questions of ``recall_facts``."""
    episodes = episodes_of(dataset)
    tenants = {c: tenant_name(i) for i, c in enumerate(dataset.conversations)}
    turn_of = {str(e.id): str(e.metadata["turn"]) for rows in episodes.values() for e in rows}
    consolidator = store.consolidator(extractor)
    per: dict[str, dict[str, int]] = {}
    sources: dict[str, list[tuple[str, set[str]]]] = {}
    for conversation, rows in episodes.items():
        tenant = tenants[conversation]
        await store.forget(user_id=tenant)
        for start in range(0, len(rows), 500):
            await store.remember_many(rows[start : start + 500])
        await consolidator.run(user_id=tenant)
        facts = await store.fact_history(user_id=tenant)
        extracted = [(f.id or "", {turn_of.get(s, "") for s in f.sources}) for f in facts]
        sources[conversation] = extracted
        gold = [o for o in observations if o.conversation == conversation]
        gold_turns = {t for o in gold for t in o.evidence}
        fact_turns = set().union(*(turns for _, turns in extracted)) if extracted else set()
        per[conversation] = {
            "observations": len(gold),
            "covered": sum(1 for o in gold if fact_turns & set(o.evidence)),
            "facts": len(extracted),
            "precise": sum(1 for _, turns in extracted if turns & gold_turns),
        }
        if progress:
            progress.update(len(rows))
    columns: dict[str, list[float]] = {f"recall@{k}": [] for k in FACT_KS}
    for q in dataset.questions:
        tenant = tenants[q.conversation]
        with store.reads_unrecorded():
            found = await store.recall_facts(q.question, user_id=tenant, limit=max(FACT_KS))
        # The evidence a fact brings: its source turns, in ranking order.
        ranked = [{turn_of.get(s, "") for s in f.sources} for f in found]
        for k in FACT_KS:
            within = set().union(*ranked[:k]) if ranked[:k] else set()
            columns[f"recall@{k}"].append(evidence_share(q.evidence, within))
        if progress:
            progress.update()
    return FactsReport(
        observations=sum(p["observations"] for p in per.values()),
        covered=sum(p["covered"] for p in per.values()),
        facts=sum(p["facts"] for p in per.values()),
        precise=sum(p["precise"] for p in per.values()),
        recall=bootstrap(columns, seed=seed),
        per_conversation=per,
    )
