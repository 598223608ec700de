"""Resolve the date phrases people use for plans, relative to when they spoke."""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

__all__ = ["DATE_PHRASE", "resolve_date"]

_MONTHS = {
    m: i
    for i, m in enumerate(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ],
        start=1,
    )
}
_MONTHS.update({name[:3]: i for name, i in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sept?|oct|nov|dec)[a-z]*\.?"
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
DATE_PHRASE = (
    r"(?:(?:on\s+)?\d{4}-\d{2}-\d{2}"
    rf"|(?:on\s+)?(?:(?:{'|'.join(_WEEKDAYS)}),?\s+)?(?:the\s+)?{_DAY}(?:\s+of)?\s+{_MONTH}(?:,?\s+\d{{4}})?"
    rf"|(?:on\s+)?(?:(?:{'|'.join(_WEEKDAYS)}),?\s+)?{_MONTH}\s+{_DAY}(?:,?\s+\d{{4}})?"
    r"|tomorrow|today|tonight|this\s+weekend|next\s+weekend|next\s+week|next\s+month|next\s+year"
    rf"|(?:next|this|on)\s+(?:{'|'.join(_WEEKDAYS)})"
    rf"|in\s+{_MONTH}(?:\s+\d{{4}})?)"
)


def _month(token: str) -> int | None:
    token = token.lower().rstrip(".")
    return _MONTHS.get(token) or _MONTHS.get(token[:3])


def _future(month: int, day: int, year: int | None, today: date) -> date | None:
    try:
        when = date(year or today.year, month, day)
        if year is None and when < today:
            when = date(today.year + 1, month, day)
    except ValueError:
        return None
    return when


def resolve_date(phrase: str, spoken: datetime) -> date | None:
    """The calendar date ``phrase`` names, as understood on ``spoken``'s day (UTC)."""
    text = re.sub(r"\s+", " ", phrase.lower().strip())
    text = re.sub(r"^on ", "", text)
    today = spoken.date()
    if m := re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", text):
        try:
            return date(int(m[1]), int(m[2]), int(m[3]))
        except ValueError:
            return None
    simple = {"today": 0, "tonight": 0, "tomorrow": 1}
    if text in simple:
        return today + timedelta(days=simple[text])
    if text in ("this weekend", "next weekend"):
        saturday = today + timedelta(days=(5 - today.weekday()) % 7)
        return saturday + timedelta(days=7 if text.startswith("next") else 0)
    if text == "next week":
        return today + timedelta(days=7 - today.weekday())
    if text == "next month":
        return date(today.year + today.month // 12, today.month % 12 + 1, 1)
    if text == "next year":
        return date(today.year + 1, 1, 1)
    if m := re.fullmatch(r"(?:(?:next|this) )?(\w+)", text):
        if m[1] in _WEEKDAYS:
            # "next friday" on a Monday means this coming Friday, as most people use it.
            ahead = (_WEEKDAYS.index(m[1]) - today.weekday()) % 7 or 7
            return today + timedelta(days=ahead)
    if m := re.fullmatch(r"in (\S+)(?: (\d{4}))?", text):
        month = _month(m[1])
        if month is not None:
            return _future(month, 1, int(m[2]) if m[2] else None, today.replace(day=1))
    text = re.sub(rf"^(?:{'|'.join(_WEEKDAYS)}),? ", "", text)
    text = re.sub(r"^the ", "", text)
    if m := re.fullmatch(r"(\d{1,2})(?:st|nd|rd|th)?(?: of)? (\S+?),?(?: (\d{4}))?", text):
        month = _month(m[2])
        if month is not None:
            return _future(month, int(m[1]), int(m[3]) if m[3] else None, today)
    if m := re.fullmatch(r"(\S+) (\d{1,2})(?:st|nd|rd|th)?,?(?: (\d{4}))?", text):
        month = _month(m[1])
        if month is not None:
            return _future(month, int(m[2]), int(m[3]) if m[3] else None, today)
    return None
