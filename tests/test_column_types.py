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


def test_every_custom_type_can_be_cached() -> None:
    # SQLAlchemy reads cache_ok from each class itself, never from a base: a type
    # without it warns and its statements are left out of the compiled cache.
    from sqlalchemy.types import TypeDecorator, UserDefinedType

    from memstore.db import types

    classes = [
        cls
        for cls in vars(types).values()
        if isinstance(cls, type)
        and issubclass(cls, TypeDecorator | UserDefinedType)
        and cls.__module__ == types.__name__
        and not cls.__name__.startswith("_Float32")  # an abstract base, never a column type
    ]
    assert {"Vector", "VectorList", "UTCDateTime"} <= {cls.__name__ for cls in classes}
    assert [cls.__name__ for cls in classes if vars(cls).get("cache_ok") is not True] == []
