"""Turn one tenant's rows (an export) into what the inspector page draws.

Pure functions over plain data: no web framework, no database. Every string
stays raw here; the templates escape it (stored data is hostile).
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

__all__ = [
    "BarView",
    "BlockView",
    "FactChange",
    "LaneView",
    "TenantView",
    "TimelineView",
    "build_tenant_view",
    "diff_lines",
]

# Width of the valid-time axis in SVG user units (the SVG scales to the page).
AXIS_WIDTH = 1000.0
ROW_HEIGHT = 18
ROW_GAP = 4
_TICKS = 5
AXIS_HEIGHT = 22


def _dt(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) else None


def _ms(value: datetime | None) -> int | None:
    return None if value is None else int(value.timestamp() * 1000)


@dataclass
class BarView:
    """One fact version: a bar over its valid time in its lane."""

    row_id: str
    fact_id: str
    object: str
    confidence: float
    sources: list[str]
    valid_from: datetime
    valid_to: datetime | None
    recorded_at: datetime
    superseded_at: datetime | None
    status: str  # "current", "superseded" or "retracted"
    x: float = 0.0
    width: float = 0.0
    y: float = 0.0

    @property
    def recorded_ms(self) -> int:
        return _ms(self.recorded_at) or 0

    @property
    def superseded_ms(self) -> int | None:
        return _ms(self.superseded_at)


@dataclass
class LaneView:
    subject: str
    predicate: str
    bars: list[BarView]
    y: float = 0.0
    height: float = 0.0


@dataclass
class FactChange:
    """One event on the transaction-time axis: what the store learnt, and when."""

    at: datetime
    kind: str  # "recorded", "superseded" or "retracted"
    bar: BarView
    lane: str


@dataclass
class TimelineView:
    lanes: list[LaneView]
    start: datetime | None
    end: datetime | None
    height: float
    changes: list[FactChange]
    # Distinct transaction times, for the "as known at" slider (epoch ms).
    known_steps: list[int]
    # Valid-time axis labels: (x, date).
    ticks: list[tuple[float, str]] = field(default_factory=list)


@dataclass
class BlockView:
    name: str
    content: str
    version: int
    # (version, created_at, diff against the previous version)
    history: list[tuple[int, str, list[tuple[str, str]]]]


@dataclass
class TenantView:
    timeline: TimelineView
    sessions: list[tuple[str, list[dict[str, Any]]]]
    episodes_by_id: dict[str, dict[str, Any]]
    blocks: list[BlockView]
    threads: list[tuple[dict[str, Any], list[dict[str, Any]]]]
    scopes: list[tuple[tuple[str, str, str], list[dict[str, Any]]]]
    checkpoints: list[dict[str, Any]]
    access: list[dict[str, Any]]
    counts: dict[str, int] = field(default_factory=dict)


def diff_lines(old: str, new: str) -> list[tuple[str, str]]:
    """Line diff of two block versions as (" " | "+" | "-", line) pairs."""
    out: list[tuple[str, str]] = []
    for line in difflib.ndiff(old.splitlines(), new.splitlines()):
        tag = line[:1]
        if tag in (" ", "+", "-"):
            out.append((tag, line[2:]))
    return out


def _status(row: dict[str, Any], recorded_in_lane: set[str]) -> str:
    superseded = row.get("superseded_at")
    if superseded is None:
        return "current"
    # A correction records its replacement rows in the same transaction (same
    # timestamp); a retraction closes the row and records nothing.
    return "superseded" if superseded in recorded_in_lane else "retracted"


def build_timeline(facts: list[dict[str, Any]], now: datetime) -> TimelineView:
    lanes_rows: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in facts:
        lanes_rows[(row["subject"], row["predicate"])].append(row)
    lanes: list[LaneView] = []
    changes: list[FactChange] = []
    steps: set[int] = set()
    all_times: list[datetime] = []
    for (subject, predicate), rows in sorted(lanes_rows.items()):
        recorded = {r["recorded_at"] for r in rows}
        bars = []
        for r in sorted(rows, key=lambda r: (r["recorded_at"], r["valid_from"], r["id"])):
            bar = BarView(
                row_id=str(r["id"]),
                fact_id=str(r["fact_id"]),
                object=str(r["object"]),
                confidence=float(r["confidence"]),
                sources=[str(s) for s in (r.get("sources") or [])],
                valid_from=_dt(r["valid_from"]) or now,
                valid_to=_dt(r.get("valid_to")),
                recorded_at=_dt(r["recorded_at"]) or now,
                superseded_at=_dt(r.get("superseded_at")),
                status=_status(r, recorded),
            )
            bars.append(bar)
            all_times.append(bar.valid_from)
            if bar.valid_to is not None:
                all_times.append(bar.valid_to)
            name = f"{subject} · {predicate}"
            changes.append(FactChange(bar.recorded_at, "recorded", bar, name))
            steps.add(bar.recorded_ms)
            if bar.superseded_at is not None:
                changes.append(FactChange(bar.superseded_at, bar.status, bar, name))
                steps.add(bar.superseded_ms or 0)
        lanes.append(LaneView(subject=subject, predicate=predicate, bars=bars))
    start = min(all_times) if all_times else None
    end = max([*all_times, now]) if all_times else None
    y = 0.0
    for lane in lanes:
        lane.y = y
        for i, bar in enumerate(lane.bars):
            bar.y = y + i * (ROW_HEIGHT + ROW_GAP)
            if start is not None and end is not None:
                span = (end - start).total_seconds() or 1.0
                left = (bar.valid_from - start).total_seconds() / span * AXIS_WIDTH
                right_t = bar.valid_to or end
                right = (right_t - start).total_seconds() / span * AXIS_WIDTH
                bar.x = left
                bar.width = max(right - left, 3.0)
        lane.height = len(lane.bars) * (ROW_HEIGHT + ROW_GAP) + 10
        y += lane.height
    changes.sort(key=lambda c: (c.at, c.kind != "superseded", c.lane))
    ticks = []
    if start is not None and end is not None:
        for i in range(_TICKS + 1):
            at = start + (end - start) * i / _TICKS
            ticks.append((AXIS_WIDTH * i / _TICKS, at.date().isoformat()))
    return TimelineView(
        lanes=lanes,
        start=start,
        end=end,
        height=max(y, 20.0),
        changes=changes,
        known_steps=sorted(steps),
        ticks=ticks,
    )


def build_tenant_view(tables: dict[str, list[dict[str, Any]]], now: datetime) -> TenantView:
    """The page's model of one tenant from ``store.export(...)["tables"]``."""
    access_rows = tables.get("access_stats", [])
    access = {(a["kind"], a["item_id"]): int(a["access_count"]) for a in access_rows}
    episodes = sorted(
        tables.get("episodes", []), key=lambda e: (e["occurred_at"], e.get("turn") or 0, e["id"])
    )
    by_session: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for ep in episodes:
        ep = {k: v for k, v in ep.items() if k not in ("embedding", "search_text")}
        ep["access_count"] = access.get(("episode", ep["id"]), 0)
        by_session[ep["session_id"]].append(ep)
    sessions = sorted(by_session.items(), key=lambda kv: kv[1][-1]["occurred_at"], reverse=True)

    versions: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for v in tables.get("block_versions", []):
        versions[v["name"]].append(v)
    blocks = []
    for b in sorted(tables.get("blocks", []), key=lambda b: (b["pinned_order"], b["name"])):
        history = []
        previous = ""
        for v in sorted(versions.get(b["name"], []), key=lambda v: v["version"]):
            history.append(
                (int(v["version"]), str(v["created_at"]), diff_lines(previous, v["content"]))
            )
            previous = v["content"]
        blocks.append(
            BlockView(
                name=b["name"], content=b["content"], version=int(b["version"]), history=history
            )
        )

    slots: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in tables.get("slots", []):
        slots[s["thread_id"]].append(s)
    threads = [
        (t, sorted(slots.get(t["thread_id"], []), key=lambda s: s["slot_index"]))
        for t in sorted(
            tables.get("threads", []), key=lambda t: t["last_activity_at"], reverse=True
        )
    ]

    scopes: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for w in tables.get("working_memory", []):
        scopes[(w["project_id"], w["agent_id"], w["session_id"])].append(w)

    return TenantView(
        timeline=build_timeline(tables.get("facts", []), now),
        sessions=sessions,
        episodes_by_id={e["id"]: e for _, eps in sessions for e in eps},
        blocks=blocks,
        threads=threads,
        scopes=sorted(scopes.items()),
        checkpoints=tables.get("working_memory_checkpoints", []),
        access=sorted(access_rows, key=lambda a: (-int(a["access_count"]), a["kind"])),
        counts={name: len(rows) for name, rows in tables.items()},
    )
