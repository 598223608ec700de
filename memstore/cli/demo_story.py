"""The main job in miniature: remember turns, consolidate them into facts, recall, travel in
time, export."""

from __future__ import annotations

import asyncio
import json
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memstore import ConfigurationError, Episode, MemoryStore

__all__ = ["main", "run_demo"]

DEMO_DB_NAME = "memstore-demo.db"
# The tenants whose story the demo tells.
DEMO_USERS = ("alice", "bob")


def _say(title: str, body: object = "") -> None:
    print(f"\n== {title}")
    if body != "":
        print(body)


def main(url: str | None = None) -> None:
    """Run the demo; without a URL on a fresh SQLite file in a new private temporary
    directory, so the output is repeatable and nothing is written where it is run from
    (a checkout stays clean). The file is kept for inspection; its path is printed."""
    path: Path | None = None
    if url is None:
        path = Path(tempfile.mkdtemp(prefix="memstore-demo-")) / DEMO_DB_NAME
        url = f"sqlite:///{path}"
    asyncio.run(run_demo(url))
    if path is not None:
        _say("the demo database is kept for inspection", f"  sqlite3 {path}")


async def _refuse_a_told_story(store: MemoryStore) -> None:
    # A second telling on the same database would find the first one's turns and
    # facts (recall hits twice over, the correction already made), and a real
    # tenant of the same name would get the demo's turns mixed into its memory:
    # the demo needs its tenants empty, and changes nothing when they are not.
    for user in DEMO_USERS:
        profile = await store.profile(user_id=user)
        if profile.episode_count or profile.fact_count or profile.block_count:
            raise ConfigurationError(
                f"this database already holds memory of tenant {user!r} (an earlier "
                f"`memstore demo` on it, or a real user of that name); the demo tells its "
                f"story as tenants {' and '.join(DEMO_USERS)} and needs them empty: run it "
                "without --url (a fresh SQLite file) or on a new database"
            )


async def run_demo(url: str) -> None:
    """Tell the story on ``url``; :class:`ConfigurationError` (nothing written) if its
    tenants already hold memory there."""
    async with MemoryStore.open(url, auto_migrate=True) as store:
        await _refuse_a_told_story(store)
        march = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
        turns = [
            (
                "alice",
                "s1",
                march,
                "Hi, I'm Alice. I just moved to Paris for a job at Acme.",
                "Welcome to Paris, Alice! How is the new job at Acme?",
            ),
            (
                "alice",
                "s1",
                march + timedelta(minutes=3),
                "I love the bakeries near my flat.",
                "Parisian bakeries are hard to beat. Any favourite pastry?",
            ),
            (
                "bob",
                "b1",
                march + timedelta(days=1),
                "Bob here. I work on Rust compilers.",
                "Nice to meet you, Bob. What part of the compiler?",
            ),
            (
                "alice",
                "s2",
                march + timedelta(days=90),
                "Big news: I relocated to London.",
                "Congratulations on the move to London!",
            ),
        ]
        ids = await store.remember_many(
            [
                Episode(user_id=u, session_id=s, occurred_at=t, input=i, output=o)
                for u, s, t, i, o in turns[:3]
            ]
        )
        _say("remembered", f"{len(ids)} turns for alice and bob")

        # The consolidation job (normally `memstore consolidate` from cron) turns
        # episodes into facts with the offline rule extractor.
        result = await store.consolidate_all_tenants()
        _say("consolidate", f"  {result.summary()}")
        extracted = await store.recall_facts("", user_id="alice", limit=20)
        _say(
            "facts alice's turns produced",
            "\n".join(
                f"  {f.subject} {f.predicate} {f.object} (confidence {f.confidence:.2f})"
                for f in sorted(extracted, key=lambda f: (f.predicate, f.object))
            ),
        )

        before_correction = store.now()
        ids.append(
            await store.remember(
                Episode(
                    user_id=turns[3][0],
                    session_id=turns[3][1],
                    occurred_at=turns[3][2],
                    input=turns[3][3],
                    output=turns[3][4],
                )
            )
        )
        result = await store.consolidate_all_tenants()
        _say("remember the move, consolidate again (supersedes lives_in)", f"  {result.summary()}")
        await store.update_block(
            "persona", "Friendly assistant. Keep answers short.", user_id="alice"
        )
        await store.append_block("persona", " Alice prefers metric units.", user_id="alice")

        hits = await store.recall("where does alice live? moved", user_id="alice", limit=3)
        _say(
            "recall('where does alice live? moved')",
            "\n".join(f"  [{e.occurred_at:%Y-%m-%d}] {e.input}" for e in hits),
        )
        bob_view = await store.recall("Paris", user_id="bob")
        _say(
            "bob recalls 'Paris' (tenant isolation: only bob's own turns come back)",
            "\n".join(f"  {e.input}" for e in bob_view),
        )

        # The lives_in facts only (a search for "lives" would rank every fact of hers).
        now_facts = await store.facts(user_id="alice", subject="alice", predicate="lives_in")
        _say(
            "where alice lives — as known now",
            "\n".join(
                f"  {f.object} (valid {f.valid_from:%Y-%m-%d} → {f.valid_to:%Y-%m-%d})"
                if f.valid_to
                else f"  {f.object} (valid since {f.valid_from:%Y-%m-%d})"
                for f in now_facts
            ),
        )
        april = march + timedelta(days=40)
        in_april = await store.facts(
            user_id="alice", subject="alice", predicate="lives_in", valid_at=april
        )
        _say(
            "where did alice live in April? (valid time)",
            "  " + ", ".join(f.object for f in in_april),
        )
        believed = await store.facts(
            user_id="alice", subject="alice", predicate="lives_in", known_at=before_correction
        )
        _say(
            "what did we believe before the correction? (transaction time)",
            "  " + ", ".join(f.object for f in believed),
        )
        history = await store.fact_history(user_id="alice", subject="alice", predicate="lives_in")
        _say(
            "fact_history(alice, lives_in)",
            "\n".join(
                f"  {f.object:<7} valid {f.valid_from:%Y-%m-%d}→"
                f"{f.valid_to.strftime('%Y-%m-%d') if f.valid_to else '…':<10} "
                f"{'current' if f.superseded_at is None else 'superseded'}"
                for f in history
            ),
        )

        blocks = await store.working(user_id="alice")
        _say("working blocks", "\n".join(f"  {b.name} v{b.version}: {b.content}" for b in blocks))
        profile = await store.profile(user_id="alice")
        _say(
            "profile",
            f"  {profile.episode_count} episodes, {profile.fact_count} current "
            f"fact rows, sessions {profile.recent_sessions}",
        )
        dump = await store.export(user_id="alice")
        size = len(json.dumps(dump))
        _say(
            "export(alice)",
            "  "
            + ", ".join(f"{name}: {len(rows)}" for name, rows in dump["tables"].items())
            + f" ({size} bytes)",
        )
