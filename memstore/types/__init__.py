"""Public value objects, in one package at the bottom of the layers.

Plain data: they import only the standard library, and checks of caller input
live with the code that takes it (``core/validation.py``, ``core/scopes.py``).
Most are immutable so a caller cannot mistake them for live rows.
:class:`~memstore.services.agent.context.Context` stays with the packer that
renders it: its rendering is the packer's budget rule, not plain data.
Import them from here (``from memstore.types import Fact``); the submodules
only group them by what they describe.
"""

from __future__ import annotations

from memstore.types.changes import Change, ChangeKind
from memstore.types.consolidation import BatchResult, ConsolidationResult
from memstore.types.defaults import new_id, utcnow
from memstore.types.memory import (
    AccessStat,
    AssertOutcome,
    BlockVersion,
    Episode,
    EpisodeMatch,
    Fact,
    FactChange,
    FactMatch,
    MemoryBlock,
    Message,
    Profile,
    Role,
)
from memstore.types.threads import GcReport, RemovedThread, Slot, SlotMetadata, ThreadInfo
from memstore.types.working import ScopeContext, ScopeLevel, TaskState

__all__ = [
    "AccessStat",
    "AssertOutcome",
    "BatchResult",
    "BlockVersion",
    "Change",
    "ChangeKind",
    "ConsolidationResult",
    "Episode",
    "EpisodeMatch",
    "Fact",
    "FactChange",
    "FactMatch",
    "GcReport",
    "MemoryBlock",
    "Message",
    "Profile",
    "RemovedThread",
    "Role",
    "ScopeContext",
    "ScopeLevel",
    "Slot",
    "SlotMetadata",
    "TaskState",
    "ThreadInfo",
    "new_id",
    "utcnow",
]
