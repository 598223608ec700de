"""The inspector over HTTP: token gate, read-only, escaping, tenant isolation."""

from __future__ import annotations

import asyncio
import html
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url

from memstore import ANONYMOUS, Episode, MemoryStore
from memstore.cli import main as cli_main
from memstore.errors import InvalidInput, NotFound, SchemaOutOfDate
from memstore.inspect.server import Inspector, check_bind
from memstore.models import ConfigRow
from tests.conftest import table_counts
from tests.inspect_support import BOB_SECRET, TOKEN, XSS, running_inspector, seed_sync
from tests.store_parts import own_engine


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def fetch(
    url: str, headers: dict[str, str] | None = None, follow: bool = True
) -> tuple[int, dict[str, str], str]:
    opener = urllib.request.build_opener() if follow else urllib.request.build_opener(_NoRedirect())
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with opener.open(request, timeout=60) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read().decode()


def bearer(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def counts(url: str) -> dict[str, Any]:
    """Rows per table, every tenant's rows and the config table: all a write could change."""

    async def go() -> dict[str, Any]:
        async with MemoryStore.open(url) as store:
            state: dict[str, Any] = dict(await table_counts(url))
            for user in ("alice", "bob", ANONYMOUS):
                state[f"dump:{user}"] = (await store.export(user_id=user))["tables"]
            async with own_engine(url) as engine, engine.connect() as conn:
                rows = await conn.execute(ConfigRow.__table__.select())
                state["config"] = sorted(tuple(r) for r in rows)
            return state

    return asyncio.run(go())


def test_every_request_needs_the_token(db_url: str) -> None:
    seed_sync(db_url)
    with running_inspector(db_url) as base:
        for path in ("/", "/t/alice", "/t/alice?q=paris", "/static/inspect.js"):
            status, _, body = fetch(base + path)
            assert status == 401, path
            assert "alice" not in body.lower() or "token" in body
            assert fetch(base + path, bearer("wrong-token-0123456789"))[0] == 401
        status, _, body = fetch(base + "/", bearer())
        assert status == 200 and "alice" in body
        # The auth scheme is case-insensitive (RFC 9110), as at the MCP door.
        assert fetch(base + "/", {"Authorization": f"bearer {TOKEN}"})[0] == 200
        # ?token= once: a redirect that drops it from the URL and sets an HttpOnly cookie.
        status, headers, _ = fetch(base + "/t/alice?token=" + TOKEN + "&q=x", follow=False)
        assert status == 303
        assert headers["location"] == "/t/alice?q=x"
        cookie = headers["set-cookie"]
        assert "HttpOnly" in cookie and "samesite=strict" in cookie.lower()
        status, _, body = fetch(base + "/t/alice", {"Cookie": cookie.split(";")[0]})
        assert status == 200 and "Paris" in body
        assert fetch(base + "/t/alice", {"Cookie": "memstore_inspect=nope"})[0] == 401


def test_without_token_only_loopback_host_names(db_url: str) -> None:
    seed_sync(db_url)
    with running_inspector(db_url, token=None) as base:
        assert fetch(base + "/")[0] == 200
        # A page on another origin reaching 127.0.0.1 by DNS rebinding names its own host.
        assert fetch(base + "/t/alice", {"Host": "evil.example:8765"})[0] == 403


def test_refuses_other_hosts_without_a_token(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(InvalidInput, match="without a token"):
        check_bind("0.0.0.0", None)
    with pytest.raises(InvalidInput, match="16-256"):
        check_bind("0.0.0.0", "short")
    check_bind("0.0.0.0", TOKEN)
    check_bind("127.0.0.1", None)
    assert cli_main(["inspect", "--host", "0.0.0.0", "--port", "1"]) == 1
    err = capsys.readouterr().err
    assert "without a token" in err and "Traceback" not in err


def test_pages_and_searches_write_nothing(db_url: str) -> None:
    seed_sync(db_url)
    before = counts(db_url)
    assert before["access_stats"] == 0
    with running_inspector(db_url) as base:
        for path in (
            "/",
            "/t/alice",
            "/t/bob",
            "/t/__anonymous__",
            "/t/alice?q=paris",
            "/t/alice?q=",
            "/t/alice?q=london&recency=0.5",
            "/t/bob?q=paris",
        ):
            status, _, body = fetch(base + path, bearer())
            assert status == 200, (path, body[:300])
        status, _, body = fetch(base + "/t/alice?q=paris", bearer())
        assert body.count('class="hit"') >= 1
    # Stopping the server closed its store, which flushes any buffered access
    # counts: had a search been recorded, access_stats would have rows now.
    assert counts(db_url) == before


def test_stored_data_is_escaped(db_url: str) -> None:
    seed_sync(db_url)
    with running_inspector(db_url) as base:
        pages = [
            fetch(base + p, bearer())[2]
            for p in ("/t/alice", "/t/alice?q=london", f"/t/alice?q={urllib.parse.quote(XSS)}")
        ]
    for page in pages:
        assert XSS not in page
        assert "<script>window" not in page and "<img src=x" not in page
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in pages[0]


def test_other_tenants_never_shown(db_url: str) -> None:
    seed_sync(db_url)
    with running_inspector(db_url) as base:
        _, _, index = fetch(base + "/", bearer())
        assert "/t/alice" in index and "/t/bob" in index
        for path in ("/t/alice", "/t/alice?q=paris", f"/t/alice?q={BOB_SECRET}"):
            status, _, html = fetch(base + path, bearer())
            assert status == 200
            assert BOB_SECRET not in html.replace(f'value="{BOB_SECRET}"', "")
        _, _, bob = fetch(base + "/t/bob", bearer())
        assert BOB_SECRET in bob and "Bonjour" not in bob
        status, _, _ = fetch(base + "/t/__reserved", bearer())
        assert status == 400


def test_inspect_stack_is_not_imported_by_memstore() -> None:
    code = (
        "import sys, memstore, memstore.cli, memstore.cli.inspect; "
        "from memstore.cli import build_parser; build_parser(['gc', '--help'][:1]); "
        "bad = [m for m in ('starlette', 'jinja2', 'uvicorn') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_missing_sqlite_file_is_not_created(capsys: pytest.CaptureFixture[str]) -> None:
    missing = Path(tempfile.mkdtemp(prefix="memstore-inspect-")) / "nope.db"
    try:
        url = f"sqlite+aiosqlite:///{missing}"
        with pytest.raises(NotFound, match="no SQLite database"):
            Inspector(url, port=1).run()
        assert cli_main(["inspect", "--url", url, "--port", "1"]) == 1
        err = capsys.readouterr().err
        assert "NotFound" in err and "Traceback" not in err
        assert not missing.exists()
    finally:
        shutil.rmtree(missing.parent)


def test_an_unmigrated_database_is_refused_not_migrated(empty_db_url: str, backend: str) -> None:
    if backend == "sqlite":
        Path(make_url(empty_db_url).database or "").touch()
    with pytest.raises(SchemaOutOfDate):
        Inspector(empty_db_url, port=1).run()


def test_a_large_tenant_shows_its_newest_rows(db_url: str) -> None:
    seed_sync(db_url)
    with running_inspector(db_url, max_rows=1) as base:
        _, _, html = fetch(base + "/t/alice", bearer())
    assert 'id="truncated"' in html and "episodes 2 (newest 1 shown)" in html
    assert "Now I live in London" in html and "I moved to Paris" not in html


def test_awkward_tenant_ids_round_trip_through_the_url(db_url: str) -> None:
    weird = "we/ird?x=1#<b>%2F"

    async def go() -> None:
        async with MemoryStore.open(db_url) as store:
            await store.remember(Episode(session_id="s", user_id=weird, input="odd", output=""))
            await store.remember(
                Episode(session_id="s", user_id=ANONYMOUS, input="anon", output="")
            )

    asyncio.run(go())
    with running_inspector(db_url) as base:
        _, _, index = fetch(base + "/", bearer())
        hrefs = re.findall(r'class="tenant-link" href="([^"]+)">([^<]*)<', index)
        assert len(hrefs) == 2
        pages = {
            html.unescape(label): fetch(base + html.unescape(href), bearer())
            for href, label in hrefs
        }
    assert pages["(anonymous)"][0] == 200 and "anon" in pages["(anonymous)"][2]
    status, _, body = pages[weird]
    assert status == 200 and "odd" in body and "anon" not in body
    assert html.escape(weird, quote=False) in body
