"""The recall pipeline: query -> terms -> vector -> one ranked statement -> relevance cut.

No SQL here: the statements and the backends' specifics are memstore.search's.
"""

from memstore.recall.hybrid import HybridRecall
from memstore.search.tuning import RecallTuning

__all__ = ["HybridRecall", "RecallTuning"]
