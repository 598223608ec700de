"""Consolidation: turn episodes into bi-temporal facts, exactly once."""

from memstore.consolidation.consolidator import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_LEASE_SECONDS,
    Consolidator,
)
from memstore.consolidation.errors import ExtractionError, LLMEndpointError, LLMResponseError
from memstore.consolidation.llm import LLMConfig, LLMExtractor
from memstore.consolidation.rules import RuleExtractor
from memstore.consolidation.types import (
    BatchResult,
    CandidateFact,
    ConsolidationResult,
    Extractor,
)

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
