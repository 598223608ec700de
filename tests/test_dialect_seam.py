"""Dialect-specific code lives behind one seam per backend; nothing else branches on the dialect.

The seam is ``memstore/dialects/`` (the ``Dialect`` ABC and the registry
:func:`memstore.dialects.dialect_for`) and one folder per backend,
``memstore/backends/<name>/``, which the registry loads by name. Everywhere else in
``memstore/`` the code asks the dialect object for a capability, a construct or a hook
and never tells backends apart itself; a third backend is one more folder
(:func:`test_a_third_backend_is_one_folder`).

The scan's rule, on every other module of ``memstore/`` (CLI included), flags:

1. a comparison (``==``, ``!=``, ``in``...) with a dialect name literal
   (``"postgresql"``, ``"postgres"``, ``"sqlite"``, any case, also inside a tuple, list
   or set operand), and a name literal given to ``with_variant``;
2. reading a backend name from SQLAlchemy: ``<x>.dialect.name``, ``get_backend_name()``,
   ``<url>.drivername``;
3. a boolean flag named after a backend: an attribute, keyword or parameter called
   ``postgres``, ``_postgres``, ``sqlite`` or ``_sqlite`` (``db.postgres``,
   ``FactSearch(postgres=...)``);
4. ``isinstance`` against a backend's class (its name starts ``Postgres``, ``Pg``,
   ``Sqlite`` or ``SQLite``).

Docstrings, comments and names that merely mention a backend are not branches.

A second scan keeps each backend's code in its folder, ``memstore/backends/<name>/``:
a token only one backend understands (its driver, its SQL, its extensions: see
:data:`BACKEND_TOKENS`) in code anywhere else in ``memstore/`` fails, unless
:data:`ALLOWED` names the file and token and says why. Code is names and string
literals (SQL included); comments and docstrings are prose.
"""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncSession

from memstore import Episode, MemoryStore
from memstore.db.engine import create_engine
from memstore.db.unit import Database
from memstore.dialects import dialect_for, dialect_of_url, dialects
from memstore.errors import ConfigurationError, MemstoreError
from memstore.schema.migrate import upgrade
from tests import tenant_audit

ROOT = Path(__file__).resolve().parents[1] / "memstore"

# The seam: the dialect modules and each backend's search half.
SEAM = ("dialects/", "backends/")

_NAMES = {"postgresql", "postgres", "sqlite"}
_FLAGS = {"postgres", "_postgres", "sqlite", "_sqlite"}
_CLASS_PREFIXES = ("Postgres", "Pg", "Sqlite", "SQLite")


def _is_name_literal(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.lower() in _NAMES
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(_is_name_literal(e) for e in node.elts)
    return False


def _is_backend_class(node: ast.AST) -> bool:
    if isinstance(node, ast.Tuple):
        return any(_is_backend_class(e) for e in node.elts)
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
    return name.startswith(_CLASS_PREFIXES)


def _why(node: ast.AST) -> str | None:
    """The rule ``node`` breaks, if any."""
    if isinstance(node, ast.Compare) and any(
        _is_name_literal(n) for n in (node.left, *node.comparators)
    ):
        return "compares with a dialect name"
    if isinstance(node, ast.Call):
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if called == "with_variant" and any(_is_name_literal(a) for a in node.args):
            return "a type variant by dialect name"
        if called == "get_backend_name":
            return "reads the URL's backend name"
        if called == "isinstance" and len(node.args) == 2 and _is_backend_class(node.args[1]):
            return "isinstance of a backend's class"
    if isinstance(node, ast.Attribute):
        if node.attr == "name" and isinstance(node.value, ast.Attribute):
            if node.value.attr == "dialect":
                return "reads .dialect.name"
        if node.attr == "drivername":
            return "reads the URL's driver name"
        if node.attr in _FLAGS:
            return f"a backend flag .{node.attr}"
    if isinstance(node, ast.keyword) and node.arg in _FLAGS:
        return f"a backend flag {node.arg}="
    if isinstance(node, ast.arg) and node.arg in _FLAGS:
        return f"a backend flag parameter {node.arg}"
    return None


def dialect_branches(root: Path = ROOT) -> list[str]:
    """``path:line: why`` of every dialect branch outside the seam, one per line."""
    found: dict[tuple[str, int], str] = {}
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative.startswith(SEAM):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            why = _why(node)
            if why is not None:
                found.setdefault((relative, getattr(node, "lineno", 0)), why)
    return [f"memstore/{p}:{line}: {why}" for (p, line), why in sorted(found.items())]


def test_no_dialect_branch_outside_the_seam() -> None:
    branches = dialect_branches()
    assert branches == [], f"{len(branches)} dialect branches outside the seam:\n" + "\n".join(
        branches
    )


def test_the_scan_sees_each_kind_of_branch(tmp_path: Path) -> None:
    """The rule is not vacuous: each kind of branch in a module outside the seam is found."""
    (tmp_path / "dialects").mkdir()
    (tmp_path / "dialects" / "sqlite.py").write_text('OK = x.dialect.name == "sqlite"\n')
    (tmp_path / "bad.py").write_text(
        "a = engine.dialect.name\n"
        'b = name in ("sqlite", "other")\n'
        "c = db.postgres\n"
        "d = FactSearch(postgres=True)\n"
        "def e(sqlite: bool) -> None: ...\n"
        "f = isinstance(backend, search.PostgresSearch)\n"
        'g = JSON().with_variant(JSONB(), "postgresql")\n'
        "h = url.get_backend_name()\n"
        "i = url.drivername\n"
        '"""A docstring naming postgres and sqlite is no branch."""\n'
        'j = "sqlite"\n'
    )
    lines = [b.split(":")[1] for b in dialect_branches(tmp_path)]
    assert lines == [str(n) for n in range(1, 10)]


# What only one backend understands, by the folder that may hold it.
BACKEND_TOKENS = {
    "postgresql": re.compile(
        r"\b(asyncpg|pg_[a-z_]+|LISTEN|NOTIFY|(?:to_)?tsvector|tsquery|pgvector|hnsw|HNSW"
        r"|[Cc]itus|PgVector\w*|JSONB|postgresql_where)\b"
    ),
    "sqlite": re.compile(
        r"\b(aiosqlite|sqlite3|PRAGMA|data_version|fts5(?:vocab)?|FTS5|SQLITE_[A-Z]+|sqlite_where)\b"
    ),
}
_PROSE = "prose in a catalogue of reasons shown to operators: it names, it runs nothing"
_COMMAND = "the name of the `memstore citus` command (its code is the backend's)"
_FROZEN = (
    "imported by the frozen revision 0010 (migrations/ never change meaning), so it stays "
    "where that revision finds it"
)
# (file under memstore/, token): why it may stay there.
ALLOWED: dict[tuple[str, str], str] = {
    ("cli/demo_story.py", "sqlite3"): "tells the user the shell command to open the demo file",
    ("embeddings/base.py", "pgvector"): "a message naming where the width bound comes from",
    ("embeddings/base.py", "HNSW"): "a message naming where the width bound comes from",
    **{("db/crosstenant.py", t): _PROSE for t in ("hnsw", "HNSW", "pgvector", "citus", "Citus")},
    **{
        ("telemetry/statements.py", t): "the fixed vocabulary of statement names a trace shows"
        for t in ("PRAGMA", "NOTIFY", "LISTEN", "UNLISTEN")
    },
    ("cli/__init__.py", "citus"): _COMMAND,
    ("cli/citus.py", "citus"): _COMMAND,
    ("schema/cluster.py", "citus"): _COMMAND,
    **{
        ("db/distribution.py", t): _FROZEN
        for t in (
            "FTS5",
            "fts5vocab",
            "citus",
            "pg_attribute",
            "pg_dist_partition",
            "pg_dist_shard",
            "pg_extension",
        )
    },
}


def _docstring_lines(tree: ast.AST) -> set[int]:
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {
        node.body[0].lineno
        for node in ast.walk(tree)
        if isinstance(node, kinds)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
        and isinstance(node.body[0].value.value, str)
    }


def stray_tokens(root: Path = ROOT) -> list[str]:
    """``path:line: token (backend)`` of every backend's token in code outside its folder."""
    code = {tokenize.NAME, tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)}
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        source = path.read_text(encoding="utf-8")
        docstrings = _docstring_lines(ast.parse(source))
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type not in code or token.start[0] in docstrings:
                continue
            for backend, pattern in BACKEND_TOKENS.items():
                if relative.startswith(f"backends/{backend}/"):
                    continue
                for match in pattern.finditer(token.string):
                    if (relative, match.group(0)) not in ALLOWED:
                        found.append(
                            f"memstore/{relative}:{token.start[0]}: {match.group(0)} ({backend})"
                        )
    return found


def test_each_backends_code_is_in_its_folder() -> None:
    stray = stray_tokens()
    unused = sorted(
        f"{path}: {token}"
        for path, token in ALLOWED
        if not (ROOT / path).exists() or token not in (ROOT / path).read_text(encoding="utf-8")
    )
    assert unused == [], "allow-list entries that no longer apply:\n" + "\n".join(unused)
    assert stray == [], f"{len(stray)} backend tokens outside their folder:\n" + "\n".join(stray)


def test_the_token_scan_sees_code_and_skips_prose(tmp_path: Path) -> None:
    (tmp_path / "backends" / "sqlite").mkdir(parents=True)
    (tmp_path / "backends" / "sqlite" / "x.py").write_text('OK = "PRAGMA foreign_keys"\n')
    (tmp_path / "backends" / "postgresql").mkdir(parents=True)
    (tmp_path / "backends" / "postgresql" / "y.py").write_text('BAD = "PRAGMA x"\n')
    (tmp_path / "bad.py").write_text(
        '"""A docstring naming asyncpg, PRAGMA and pg_notify is prose."""\n'
        "import aiosqlite  # a comment naming pgvector is prose\n"
        'q = text("SELECT pg_advisory_xact_lock(:k)")\n'
        'f = f"CREATE VIRTUAL TABLE t USING fts5({x})"\n'
    )
    assert stray_tokens(tmp_path) == [
        "memstore/backends/postgresql/y.py:1: PRAGMA (sqlite)",
        "memstore/bad.py:2: aiosqlite (sqlite)",
        "memstore/bad.py:3: pg_advisory_xact_lock (postgresql)",
        "memstore/bad.py:4: fts5 (sqlite)",
    ]


def test_every_registered_dialect_resolves_by_its_name() -> None:
    assert {d.name for d in dialects()} == {"postgresql", "sqlite"}
    for dialect in dialects():
        assert dialect_for(dialect.name) is dialect


def test_an_unknown_dialect_is_refused_with_a_memstore_error() -> None:
    with pytest.raises(ConfigurationError) as caught:
        dialect_for("mysql")
    assert isinstance(caught.value, MemstoreError)
    assert "mysql" in str(caught.value)
    assert "postgresql" in str(caught.value) and "sqlite" in str(caught.value)


async def test_a_real_database_resolves_to_its_dialect(db_url: str) -> None:
    """Engine, connection, session and URL of each backend name the same registered dialect."""
    engine = create_engine(db_url)
    try:
        expected = dialect_of_url(make_url(db_url))
        assert expected is not None and expected.name == engine.dialect.name
        assert dialect_for(engine) is expected
        async with engine.connect() as connection:
            assert dialect_for(connection) is expected
        async with AsyncSession(engine) as session:
            assert dialect_for(session) is expected
        assert Database(engine).backend is expected
    finally:
        await engine.dispose()


def test_an_unknown_backend_url_is_refused_before_connecting() -> None:
    assert dialect_of_url(make_url("mysql://u@h/db")) is None
    with pytest.raises(ConfigurationError, match="unsupported database backend 'mysql'"):
        create_engine("mysql://u@h/db")


# A third backend, as a package of its own: the SQLite backend under a new name, with
# the SQLAlchemy dialect and Alembic implementation a new name needs. It is all one
# folder; nothing in memstore/ lists it.
_THIRD = '''
"""thirdsql: SQLite's engine under a name of its own."""

from alembic.ddl.sqlite import SQLiteImpl
from sqlalchemy.dialects import registry
from sqlalchemy.dialects.sqlite.aiosqlite import SQLiteDialect_aiosqlite

from memstore.backends.sqlite import SqliteDialect


class ThirdSQLAlchemyDialect(SQLiteDialect_aiosqlite):
    name = "thirdsql"
    supports_statement_cache = True


class ThirdAlembicImpl(SQLiteImpl):
    __dialect__ = "thirdsql"


registry.register("thirdsql.aiosqlite", __name__, "ThirdSQLAlchemyDialect")


class ThirdDialect(SqliteDialect):
    name = "thirdsql"
    label = "ThirdSQL"
    bare_drivers = ("thirdsql",)
    async_driver = "thirdsql+aiosqlite"


DIALECT = ThirdDialect()
'''


@pytest.mark.sqlite
async def test_a_third_backend_is_one_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backend package dropped into memstore.backends is found by name and runs a store.

    The schema is SQLite's, migrated through the SQLite backend: the Alembic revisions
    are frozen and name their two backends, so a new name brings its own migrations.
    """
    import memstore.backends
    import memstore.dialects as registry

    folder = tmp_path / "backends"
    (folder / "thirdsql").mkdir(parents=True)
    (folder / "thirdsql" / "__init__.py").write_text(_THIRD)
    monkeypatch.setattr(memstore.backends, "__path__", [*memstore.backends.__path__, str(folder)])
    # The registry forgets the test's backend afterwards, as the package path does.
    monkeypatch.setattr(registry, "_loaded", dict(registry._loaded))  # noqa: SLF001
    monkeypatch.delitem(sys.modules, "memstore.backends.thirdsql", raising=False)
    # The session's tenant audit reads the new backend's statements as the SQLite they are.
    monkeypatch.setitem(tenant_audit._SQLGLOT_DIALECT, "thirdsql", "sqlite")  # noqa: SLF001
    database = tmp_path / "third.db"
    await upgrade(f"sqlite:///{database}")

    assert "thirdsql" in {d.name for d in dialects()}
    url = f"thirdsql:///{database}"
    third = dialect_of_url(make_url(url))
    assert third is not None and third.label == "ThirdSQL"
    async with MemoryStore.open(url, auto_migrate=False) as store:
        assert dialect_for(store.backend) is third
        await store.remember(Episode(session_id="s", user_id="u", input="the cat sleeps"))
        await store.remember(Episode(session_id="s", user_id="u", input="rain in the north"))
        found = await store.recall("cat", user_id="u")
    assert found[0].input == "the cat sleeps"
