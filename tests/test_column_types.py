"""The portable column types declare their Python types (used by SQLAlchemy tooling and
by code that introspects the models, e.g. export and import)."""

from __future__ import annotations

from datetime import datetime

import numpy as np

from memstore.db.types import UTCDateTime, Vector
from memstore.models import EpisodeRow, FactRow


def test_custom_types_declare_their_python_type() -> None:
    assert UTCDateTime().python_type is datetime
    assert Vector().python_type is np.ndarray


def test_model_columns_expose_python_types() -> None:
    assert EpisodeRow.__table__.c.occurred_at.type.python_type is datetime
    assert FactRow.__table__.c.embedding.type.python_type is np.ndarray
