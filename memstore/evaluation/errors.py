"""The error of an evaluation file that cannot be read as its format."""

from __future__ import annotations

from memstore.errors import InvalidInput

__all__ = ["InvalidEvaluationData"]


class InvalidEvaluationData(InvalidInput):
    """An evaluation file is missing, not JSON, or not in its format's shape (a field
    missing or of the wrong type, an evidence id that names no turn); nothing was run.

    ``source`` is the file; ``where`` the place in it (e.g. ``"line 3"``,
    ``"sample 2 (conv-30), qa 14"``), or None for the file as a whole.
    """

    def __init__(self, source: str, where: str | None, cause: str) -> None:
        place = f"{source}: {where}" if where else source
        super().__init__(f"{place}: {cause}")
        self.source = source
        self.where = where
        self.cause = cause
