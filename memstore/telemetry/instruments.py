"""memstore's metric instruments, made once per meter provider (None while none is set)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memstore.telemetry._state import meter
from memstore.telemetry.names import METRICS

if TYPE_CHECKING:
    from opentelemetry.metrics import Meter

__all__ = ["Instruments", "instruments"]


class Instruments:
    """One instrument per name of :data:`~memstore.telemetry.names.METRICS`."""

    def __init__(self, made: Meter) -> None:
        self.meter = made
        self._by_name: dict[str, Any] = {}
        for name, (kind, unit, description) in METRICS.items():
            self._by_name[name] = _make(made, kind, name, unit, description)

    def add(self, name: str, amount: float, attributes: dict[str, Any]) -> None:
        self._by_name[name].add(amount, attributes)

    def record(self, name: str, value: float, attributes: dict[str, Any]) -> None:
        self._by_name[name].record(value, attributes)

    def set(self, name: str, value: float, attributes: dict[str, Any]) -> None:
        self._by_name[name].set(value, attributes)


def _make(made: Meter, kind: str, name: str, unit: str, description: str) -> Any:
    if kind == "histogram":
        return made.create_histogram(name, unit=unit, description=description)
    if kind == "counter":
        return made.create_counter(name, unit=unit, description=description)
    if kind == "updown":
        return made.create_up_down_counter(name, unit=unit, description=description)
    return made.create_gauge(name, unit=unit, description=description)


class _Cache:
    __slots__ = ("made", "meter")

    def __init__(self) -> None:
        self.meter: object = None
        self.made: Instruments | None = None


_CACHE = _Cache()


def instruments() -> Instruments | None:
    """The instruments of the current meter provider; None when no SDK is set."""
    current = meter()
    if current is None:
        return None
    if current is not _CACHE.meter:
        _CACHE.made = Instruments(current)
        _CACHE.meter = current
    return _CACHE.made
