"""Statement-level tenant audit: does every statement on a tenant table filter on user_id?

``find_violations(sql, dialect)`` parses one SQL statement (sqlglot) and returns
every reference to a tenant table whose ``user_id`` is not pinned to a value:
an equality with a bound parameter or literal, ``IN (…)`` of those (also a
tuple ``(user_id, …) IN (…)``), ``= ANY(…)``, or an equality with another
column that is itself pinned (joins, correlated subqueries). Only conjuncts
count (an ``OR`` pins nothing). Scopes are followed through CTEs, derived
tables (a filter on the outer query reaches a derived table's column only when
it can be pushed down: no LIMIT/OFFSET, DISTINCT, GROUP BY or window), subqueries in
WHERE / select lists, INSERT … SELECT, UPSERTs, UPDATE … FROM and DELETE … USING.
An INSERT must name ``user_id`` among its columns. DDL naming a tenant table is
a violation too (it is for migrations and RLS management, which are marked).

PostgreSQL statements are also judged for what a Citus cluster (tables distributed
by ``user_id``, co-located) can route to one shard even though they name their
tenant: a subquery inside ``INSERT … VALUES`` (refused by Citus), and an
``INSERT … SELECT`` whose ``user_id`` does not come from a co-located tenant table
(planned through the coordinator). tests/test_citus_routing.py proves the rest on
a real cluster with EXPLAIN.

``TenantAudit`` is the engine hook: installed on SQLAlchemy's ``Engine`` class
(so every engine, including those the library creates internally, is covered),
and as an observer of the statements memstore sends to the driver directly
(:mod:`memstore.db.observers`, the hot path of :mod:`memstore.db.prepared`),
it judges each statement (verdicts cached per SQL text) and records the
violations of statements that come from the library — the caller is taken from
the stack, and statements that test code issues itself (fixture wipes,
verification scans) are not the library's. A statement carrying the execution
option of a registered cross-tenant operation
(:mod:`memstore.db.crosstenant`) is allowed and counted under that name.
"""

from __future__ import annotations

import logging
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import sqlglot
from sqlglot import exp

import memstore
from memstore.db.crosstenant import CROSS_TENANT_OPERATIONS, CROSS_TENANT_OPTION
from memstore.db.observers import Executed
from memstore.repositories.tenants import tenant_tables

__all__ = ["TenantAudit", "Violation", "find_violations", "tenant_table_names"]

# sqlglot warns on every DDL it keeps as a raw Command (triggers); those are judged as DDL.
logging.getLogger("sqlglot").setLevel(logging.ERROR)

TENANT_COLUMN = "user_id"
_SQLGLOT_DIALECT = {"sqlite": "sqlite", "postgresql": "postgres"}
_DDL = (exp.Create, exp.Drop, exp.Alter, exp.TruncateTable, exp.Command)


def tenant_table_names() -> frozenset[str]:
    import memstore.models  # noqa: F401  (registers every table)

    return frozenset(t.name for t in tenant_tables())


# ---- the analyser --------------------------------------------------------------------


class _Unpinned(Exception):
    pass


@dataclass(eq=False)
class _Source:
    """One FROM item of a scope: a base table, or a derived table / CTE reference."""

    alias: str
    table: str | None = None  # base table name
    derived: exp.Expression | None = None  # SELECT / UNION body
    outer_only: bool = False  # right side of an outer join: ON pins it, not the scope
    constant: bool = False  # a VALUES list of bound values: every column is a value


@dataclass
class _Scope:
    sources: dict[str, _Source]
    parent: _Scope | None
    pinned: set[tuple[int, str]] = field(default_factory=set)

    def resolve(self, column: exp.Column) -> tuple[_Scope, _Source] | None:
        qualifier = column.table.lower() if column.table else ""
        scope: _Scope | None = self
        while scope is not None:
            if qualifier:
                if qualifier in scope.sources:
                    return scope, scope.sources[qualifier]
            elif len(scope.sources) == 1:
                return scope, next(iter(scope.sources.values()))
            scope = scope.parent
        return None


def _is_value(node: exp.Expression) -> bool:
    while isinstance(node, (exp.Cast, exp.Paren)):
        node = node.this
    return isinstance(node, (exp.Placeholder, exp.Parameter, exp.Literal))


def _unwrap(node: exp.Expression) -> exp.Expression:
    while isinstance(node, (exp.Cast, exp.Paren)):
        node = node.this
    return node


def _constant_rows(node: exp.Expression) -> bool:
    """A ``VALUES`` list whose every cell is a bound value or literal (e.g. buffered rows)."""
    if isinstance(node, exp.Subquery):
        node = node.this
    if isinstance(node, exp.Select):  # sqlglot reads a bare VALUES as SELECT * FROM (VALUES …)
        from_ = node.args.get("from_") or node.args.get("from")
        plain = [type(e) for e in node.expressions] == [exp.Star] and not node.args.get("where")
        if not plain or from_ is None or node.args.get("joins"):
            return False
        node = from_.this
    if not isinstance(node, exp.Values) or not node.expressions:
        return False
    return all(
        isinstance(row, exp.Tuple) and all(_is_value(cell) for cell in row.expressions)
        for row in node.expressions
    )


def _conjuncts(node: exp.Expression | None) -> list[exp.Expression]:
    if node is None:
        return []
    node = _unwrap(node) if isinstance(node, exp.Paren) else node
    if isinstance(node, exp.And):
        return _conjuncts(node.this) + _conjuncts(node.expression)
    return [node]


def _key(scope: _Scope, column: exp.Column) -> tuple[int, str] | None:
    found = scope.resolve(column)
    if found is None:
        return None
    return (id(found[1]), column.name.lower())


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[Any, Any] = {}

    def find(self, x: Any) -> Any:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: Any, b: Any) -> None:
        self.parent[self.find(a)] = self.find(b)


_VALUE = ("value",)


def _pin_facts(scope: _Scope, conditions: list[exp.Expression]) -> set[tuple[int, str]]:
    """Columns of ``scope`` (or outer scopes) pinned by the conjuncts ``conditions``."""
    uf = _UnionFind()
    uf.find(_VALUE)
    for key in scope.pinned:
        uf.union(key, _VALUE)
    parent = scope.parent
    while parent is not None:
        for key in parent.pinned:
            uf.union(key, _VALUE)
        parent = parent.parent
    for cond in conditions:
        cond = _unwrap(cond)
        if isinstance(cond, exp.EQ):
            left, right = _unwrap(cond.this), _unwrap(cond.expression)
            sides = []
            for side in (left, right):
                if isinstance(side, exp.Column):
                    found = scope.resolve(side)
                    if found is not None and found[1].constant:
                        sides.append(_VALUE)
                    else:
                        sides.append(_key(scope, side))
                elif _is_value(side):
                    sides.append(_VALUE)
                elif isinstance(side, exp.Any) and _is_value(side.this):
                    sides.append(_VALUE)
                else:
                    sides.append(None)
            if sides[0] is not None and sides[1] is not None:
                uf.union(sides[0], sides[1])
        elif isinstance(cond, exp.In) and not cond.args.get("query"):
            values = cond.expressions
            target = _unwrap(cond.this)
            if isinstance(target, exp.Column):
                if values and all(_is_value(v) for v in values):
                    k = _key(scope, target)
                    if k is not None:
                        uf.union(k, _VALUE)
            elif isinstance(target, exp.Tuple):
                rows = [_unwrap(v) for v in values]
                if len(rows) == 1 and isinstance(rows[0], exp.Values):
                    rows = [_unwrap(r) for r in rows[0].expressions]
                for position, element in enumerate(target.expressions):
                    element = _unwrap(element)
                    if not isinstance(element, exp.Column):
                        continue
                    if rows and all(
                        isinstance(r, exp.Tuple)
                        and len(r.expressions) > position
                        and _is_value(r.expressions[position])
                        for r in rows
                    ):
                        k = _key(scope, element)
                        if k is not None:
                            uf.union(k, _VALUE)
    root = uf.find(_VALUE)
    return {k for k in list(uf.parent) if k != _VALUE and uf.find(k) == root}


class _Analyser:
    def __init__(self, tenant: frozenset[str], *, routing: bool = False) -> None:
        self.tenant = tenant
        self.routing = routing  # also judge what a Citus cluster can route (PostgreSQL)
        self.problems: list[str] = []

    # -- entry points --------------------------------------------------------------

    def statement(self, node: exp.Expression) -> None:
        ctes = self._ctes(node, {})
        if isinstance(node, _DDL):
            self._ddl(node)
        elif isinstance(node, exp.Insert):
            self._insert(node, ctes)
        elif isinstance(node, exp.Update):
            self._dml(node, node.this, node.args.get("from_") or node.args.get("from"), ctes)
        elif isinstance(node, exp.Delete):
            self._dml(node, node.this, None, ctes, extra=node.args.get("using") or [])
        elif isinstance(node, (exp.Select, exp.Union, exp.Subquery)):
            self._query(node, None, set(), ctes)
        else:  # PRAGMA, SET, transaction control, …: only tables they name matter
            for table in node.find_all(exp.Table):
                if table.name.lower() in self.tenant:
                    self.problems.append(f"{table.name}: statement kind not analysed")

    def _ddl(self, node: exp.Expression) -> None:
        text = node.sql().lower()
        for name in sorted(self.tenant):
            if re.search(rf"\b{re.escape(name)}\b", text):
                self.problems.append(f"{name}: DDL on a tenant table")

    def _ctes(
        self, node: exp.Expression, inherited: dict[str, exp.Expression]
    ) -> dict[str, exp.Expression]:
        ctes = dict(inherited)
        with_ = node.args.get("with_") or node.args.get("with")
        if with_ is not None:
            for cte in with_.expressions:
                ctes[cte.alias_or_name.lower()] = cte.this
        return ctes

    # -- INSERT / UPDATE / DELETE ------------------------------------------------------

    def _insert(self, node: exp.Insert, ctes: dict[str, exp.Expression]) -> None:
        target = node.this
        columns: list[str] = []
        if isinstance(target, exp.Schema):
            columns = [c.name.lower() for c in target.expressions]
            target = target.this
        name = target.name.lower() if isinstance(target, exp.Table) else ""
        if name in self.tenant and TENANT_COLUMN not in columns:
            self.problems.append(f"{name}: INSERT without a {TENANT_COLUMN} column")
        source = node.expression
        if isinstance(source, (exp.Select, exp.Union, exp.Subquery)):
            self._query(source, None, set(), ctes)
        if self.routing and name in self.tenant:
            self._citus_insert(name, columns, source, ctes)
        # ON CONFLICT … DO UPDATE acts on the row that conflicts with the inserted
        # key (which holds user_id); its subqueries are still scopes of their own.
        conflict = node.args.get("conflict")
        if conflict is not None:
            for sub in conflict.find_all(exp.Select):
                self._query(sub, None, set(), ctes)

    def _citus_insert(
        self,
        name: str,
        columns: list[str],
        source: exp.Expression | None,
        ctes: dict[str, exp.Expression],
    ) -> None:
        """What Citus cannot route although the rows name their tenant.

        A subquery inside VALUES is refused outright ("subqueries are not supported
        within INSERT queries"). An INSERT … SELECT is routed (pushed down to the shard)
        only when it reads a co-located distributed table and inserts that table's
        user_id column; from anything else (unnest, a VALUES list, a CTE) the SELECT
        runs on the coordinator and its rows are then re-routed.
        """
        if isinstance(source, exp.Values):
            if any(True for _ in source.find_all(exp.Select)):
                self.problems.append(
                    f"{name}: a subquery in INSERT … VALUES, which Citus refuses "
                    "(subqueries are not supported within INSERT queries)"
                )
            return
        if source is None:
            return
        if not self._colocated_select(source, columns, ctes):
            self.problems.append(
                f"{name}: INSERT … SELECT whose {TENANT_COLUMN} is not a co-located tenant "
                "table's column; Citus plans it through the coordinator, not on one shard"
            )

    def _colocated_select(
        self, source: exp.Expression, columns: list[str], ctes: dict[str, exp.Expression]
    ) -> bool:
        while isinstance(source, exp.Subquery):
            source = source.this
        if not isinstance(source, exp.Select) or TENANT_COLUMN not in columns:
            return False
        from_ = source.args.get("from_") or source.args.get("from")
        first = from_.this if from_ is not None else None
        if not isinstance(first, exp.Table) or first.name.lower() not in self.tenant:
            return False
        if first.name.lower() in ctes and not first.db:
            return False
        position = columns.index(TENANT_COLUMN)
        if position >= len(source.expressions):
            return False
        value = _unwrap(source.expressions[position])
        if isinstance(value, exp.Alias):
            value = _unwrap(value.this)
        if not isinstance(value, exp.Column) or value.name.lower() != TENANT_COLUMN:
            return False
        qualifier = value.table.lower() if value.table else ""
        return qualifier in ("", first.name.lower(), (first.alias or "").lower())

    def _dml(
        self,
        node: exp.Expression,
        target: exp.Expression,
        from_: Any,
        ctes: dict[str, exp.Expression],
        extra: list[exp.Expression] | None = None,
    ) -> None:
        items: list[exp.Expression] = [target]
        if from_ is not None:
            items.append(from_.this)
            items.extend(from_.expressions or [])
        items.extend(extra or [])
        where = node.args.get("where")
        self._scope(items, [], where.this if where else None, None, set(), ctes, node)

    # -- queries -----------------------------------------------------------------------

    def _query(
        self,
        node: exp.Expression,
        parent: _Scope | None,
        pushed: set[str],
        ctes: dict[str, exp.Expression],
    ) -> None:
        if isinstance(node, exp.Subquery):
            node = node.this
        ctes = self._ctes(node, ctes)
        if isinstance(node, exp.Union):  # UNION / INTERSECT / EXCEPT
            self._query(node.this, parent, pushed, ctes)
            self._query(node.expression, parent, pushed, ctes)
            return
        if not isinstance(node, exp.Select):
            return
        from_ = node.args.get("from_") or node.args.get("from")
        items: list[exp.Expression] = []
        if from_ is not None:
            items.append(from_.this)
            items.extend(from_.expressions or [])
        where = node.args.get("where")
        pinned_here = self._pushed_keys(node, pushed)
        self._scope(
            items,
            node.args.get("joins") or [],
            where.this if where else None,
            parent,
            pinned_here,
            ctes,
            node,
        )

    def _pushed_keys(self, select: exp.Select, pushed: set[str]) -> set[str]:
        """Inner column names an outer filter on ``pushed`` output names can pin."""
        if not pushed:
            return set()
        blocked = any(select.args.get(k) for k in ("limit", "offset", "distinct", "group"))
        if blocked or any(select.find_all(exp.Window)):
            return set()
        names = set()
        for projection in select.expressions:
            inner = _unwrap(projection.this if isinstance(projection, exp.Alias) else projection)
            if isinstance(inner, exp.Column) and projection.alias_or_name.lower() in pushed:
                names.add(exp.column(inner.name, inner.table).sql().lower())
        return names

    def _source(self, item: exp.Expression, ctes: dict[str, exp.Expression]) -> _Source | None:
        if isinstance(item, exp.Table):
            name = item.name.lower()
            alias = (item.alias or item.name).lower()
            if name in ctes and not item.db:
                body = ctes[name]
                return _Source(alias=alias, derived=body, constant=_constant_rows(body))
            return _Source(alias=alias, table=name)
        if isinstance(item, exp.Subquery):
            return _Source(
                alias=item.alias.lower(), derived=item.this, constant=_constant_rows(item.this)
            )
        if isinstance(item, exp.Values):
            return _Source(alias=item.alias.lower(), derived=item, constant=_constant_rows(item))
        return None

    def _scope(
        self,
        items: list[exp.Expression],
        joins: list[exp.Join],
        where: exp.Expression | None,
        parent: _Scope | None,
        pushed_columns: set[str],
        ctes: dict[str, exp.Expression],
        node: exp.Expression,
    ) -> None:
        scope = _Scope(sources={}, parent=parent)
        for item in items:
            src = self._source(item, ctes)
            if src is not None:
                scope.sources[src.alias] = src
        outer_joins: list[tuple[_Source, exp.Expression | None]] = []
        conditions = _conjuncts(where)
        for join in joins:
            src = self._source(join.this, ctes)
            if src is None:
                continue
            scope.sources[src.alias] = src
            on = join.args.get("on")
            if join.side in ("LEFT", "RIGHT", "FULL"):
                src.outer_only = True
                outer_joins.append((src, on))
            else:
                conditions.extend(_conjuncts(on))
        # Pins pushed down from an outer query onto plain column projections.
        for text in pushed_columns:
            column = sqlglot.parse_one(text, into=exp.Column)
            key = _key(scope, column)
            if key is not None:
                scope.pinned.add(key)
        scope.pinned |= {k for k in _pin_facts(scope, conditions)}
        for src, on in outer_joins:
            extra = _pin_facts(scope, conditions + _conjuncts(on))
            if (id(src), TENANT_COLUMN) in extra:
                scope.pinned.add((id(src), TENANT_COLUMN))
        # Base tables must be pinned; derived ones are checked inside.
        for src in scope.sources.values():
            if src.table is not None and src.table in self.tenant:
                if (id(src), TENANT_COLUMN) not in scope.pinned:
                    self.problems.append(
                        f"{src.table}"
                        + (f" AS {src.alias}" if src.alias != src.table else "")
                        + f": no filter on {TENANT_COLUMN}"
                    )
            elif src.derived is not None and not src.constant:
                pushed = {name for (ident, name) in scope.pinned if ident == id(src)}
                self._query(src.derived, None, pushed, ctes)
        # Subqueries nested in this scope's expressions (WHERE, ON, select list…).
        for sub in self._nested_queries(node, items, joins):
            self._query(sub, scope, set(), ctes)

    def _nested_queries(
        self, node: exp.Expression, items: list[exp.Expression], joins: list[exp.Join]
    ) -> list[exp.Expression]:
        derived = {id(i) for i in items} | {id(j.this) for j in joins}
        out = []
        for sub in node.find_all(exp.Select):
            if sub is node:
                continue
            # Only the ones whose nearest enclosing SELECT/DML is ``node``, and not
            # FROM items (those were handled as derived sources).
            up = sub.parent
            inside_derived = False
            while up is not None and up is not node:
                if id(up) in derived:
                    inside_derived = True
                    break
                if isinstance(up, (exp.Select, exp.Union)) or isinstance(up, exp.CTE):
                    inside_derived = True
                    break
                up = up.parent
            if not inside_derived and up is node:
                out.append(sub)
        return out


@lru_cache(maxsize=65536)
def find_violations(
    sql: str, dialect: str, tenant: frozenset[str] | None = None
) -> tuple[str, ...]:
    """Problems of one statement (empty when it is tenant-safe); cached per text."""
    tenant = tenant if tenant is not None else tenant_table_names()
    lowered = sql.lower()
    if not any(name in lowered for name in tenant):
        return ()
    try:
        parsed = sqlglot.parse(sql, read=_SQLGLOT_DIALECT.get(dialect, dialect))
    except sqlglot.errors.SqlglotError as exc:
        return (f"unparseable statement ({exc.__class__.__name__}): cannot prove a filter",)
    # PostgreSQL statements may run on a Citus cluster: judge their routability too.
    analyser = _Analyser(tenant, routing=dialect == "postgresql")
    for node in parsed:
        if node is not None:
            analyser.statement(node)
    return tuple(dict.fromkeys(analyser.problems))


# ---- the engine hook -------------------------------------------------------------------

_PACKAGE = str(Path(memstore.__file__).resolve().parent) + "/"
_TESTS = str(Path(__file__).resolve().parent) + "/"
_SELF = str(Path(__file__).resolve())
# memstore's own modules that run statements for others: the caller is further up.
_PLUMBING = ("/db/engine.py", "/db/prepared.py")


def _origin() -> str:
    """Who issued the running statement: ``library:<file>:<line>``, ``tests`` or ``other``.

    Walks the stack across SQLAlchemy's async greenlets (each one's bottom frame
    has no ``f_back``; the caller is suspended in the parent greenlet).
    """
    import greenlet

    # CPython's frame access; the greenlet walk below needs real frames.
    frame = sys._getframe(1)  # noqa: SLF001
    current: Any = greenlet.getcurrent()
    while True:
        while frame is not None:
            filename = frame.f_code.co_filename
            if filename == _SELF:  # the hook's own frames
                frame = frame.f_back
                continue
            if filename.startswith(_TESTS):
                return "tests"
            if filename.startswith(_PACKAGE) and not filename.endswith(_PLUMBING):
                rel = filename[len(_PACKAGE) :]
                return f"library:memstore/{rel}:{frame.f_lineno}"
            frame = frame.f_back
        current = current.parent
        if current is None:
            return "other"
        frame = current.gr_frame


@dataclass(frozen=True)
class Violation:
    sql: str
    problems: tuple[str, ...]
    origin: str

    def __str__(self) -> str:
        sql = " ".join(self.sql.split())
        return f"{self.origin}\n    {sql[:400]}\n    -> " + "; ".join(self.problems)


@dataclass
class TenantAudit:
    """The ``before_cursor_execute`` hook and what it saw."""

    tenant: frozenset[str] = field(default_factory=tenant_table_names)
    # The operations honoured; a test can audit with none to see what they cover.
    allowed_operations: frozenset[str] = frozenset(CROSS_TENANT_OPERATIONS)
    statements: int = 0
    allowed: Counter[str] = field(default_factory=Counter)
    violations: list[Violation] = field(default_factory=list)
    test_own: int = 0
    seconds: float = 0.0

    def __call__(
        self,
        conn: Any,
        cursor: Any,
        statement: str,
        parameters: Any,
        context: Any,
        executemany: bool,
    ) -> None:
        started = time.perf_counter()
        try:
            self._judge(conn, statement, context)
        finally:
            # What the audit costs the run, reported in the terminal summary.
            self.seconds += time.perf_counter() - started

    def hot_path(self, executed: Executed) -> None:
        """The observer of memstore.db.observers: statements sent past SQLAlchemy."""
        started = time.perf_counter()
        try:
            self._judge_text(executed.sql, executed.dialect, executed.cross_tenant)
        finally:
            self.seconds += time.perf_counter() - started

    def _judge(self, conn: Any, statement: str, context: Any) -> None:
        options = context.execution_options if context is not None else {}
        self._judge_text(statement, conn.dialect.name, options.get(CROSS_TENANT_OPTION))

    def _judge_text(self, statement: str, dialect: str, operation: str | None) -> None:
        self.statements += 1
        problems = find_violations(statement, dialect, self.tenant)
        if not problems:
            return
        if operation is not None:
            if operation in self.allowed_operations:
                self.allowed[operation] += 1
                return
            problems = (*problems, f"cross-tenant operation {operation!r} not allowed")
        origin = _origin()
        if origin == "tests":
            self.test_own += 1
            return
        self.violations.append(Violation(statement, problems, origin))

    def take(self) -> list[Violation]:
        found, self.violations = self.violations, []
        return found
