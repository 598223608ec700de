"""Consolidation: turn episodes into bi-temporal facts, exactly once."""

from memstore.services.consolidation.consolidator import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_LEASE_SECONDS,
    Consolidator,
)
from memstore.services.consolidation.errors import (
    ExtractionError,
    LLMEndpointError,
    LLMResponseError,
)
from memstore.services.consolidation.llm import LLMConfig, LLMExtractor
from memstore.services.consolidation.rules import RuleExtractor
from memstore.services.consolidation.types import (
    CandidateFact,
    Extractor,
)
from memstore.types import BatchResult, ConsolidationResult

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_LEASE_SECONDS",
    "BatchResult",
    "CandidateFact",
    "ConsolidationResult",
    "Consolidator",
    "ExtractionError",
    "Extractor",
    "LLMConfig",
    "LLMEndpointError",
    "LLMExtractor",
    "LLMResponseError",
    "RuleExtractor",
]
