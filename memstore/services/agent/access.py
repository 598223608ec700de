"""The access prior: how much being recalled or loaded often lifts an item's rank.

The counters are kept by :class:`memstore.services.access.AccessTracker`.
"""

from __future__ import annotations

import math

__all__ = [
    "ACCESS_PRIOR_WEIGHT",
    "access_prior",
]

# The prior is deliberately small: at most this much is added to a relevance
# score in [0, ~1], so access frequency breaks near-ties but never outranks a
# clearly better match.
ACCESS_PRIOR_WEIGHT = 0.05
# Access count at which the prior saturates.
_PRIOR_SATURATION = 100


def access_prior(count: int) -> float:
    """A bonus in ``[0, ACCESS_PRIOR_WEIGHT]`` growing logarithmically with ``count``."""
    if count <= 0:
        return 0.0
    return ACCESS_PRIOR_WEIGHT * min(1.0, math.log1p(count) / math.log1p(_PRIOR_SATURATION))
