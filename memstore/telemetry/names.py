"""Attribute, span and instrument names: the OpenTelemetry semantic conventions' where one
exists (database client, GenAI), memstore's own (``memstore.*``) otherwise."""

from __future__ import annotations

import hashlib

__all__ = [
    "DB_OPERATION",
    "DB_SYSTEM",
    "DB_SYSTEM_NAME",
    "ERROR_TYPE",
    "GEN_AI_INPUT_TOKENS",
    "GEN_AI_MODEL",
    "GEN_AI_OPERATION",
    "GEN_AI_TOKEN_TYPE",
    "METRICS",
    "OPERATION",
    "TENANT_HASH",
    "db_system",
    "error_type",
    "tenant_hash",
]

DB_SYSTEM = "db.system"
DB_SYSTEM_NAME = "db.system.name"
DB_OPERATION = "db.operation.name"
ERROR_TYPE = "error.type"
GEN_AI_OPERATION = "gen_ai.operation.name"
GEN_AI_MODEL = "gen_ai.request.model"
GEN_AI_TOKEN_TYPE = "gen_ai.token.type"
GEN_AI_INPUT_TOKENS = "gen_ai.usage.input_tokens"
OPERATION = "memstore.operation"
TENANT_HASH = "memstore.tenant.hash"

# Every instrument memstore creates: name -> (kind, unit, description). The Grafana
# dashboard's queries are checked against these names (tests/test_telemetry_dashboard.py).
METRICS: dict[str, tuple[str, str, str]] = {
    "memstore.operation.duration": ("histogram", "s", "Duration of memstore operations"),
    "db.client.operation.duration": ("histogram", "s", "Duration of database statements"),
    "memstore.db.statements": ("counter", "{statement}", "Statements run, per operation"),
    "db.client.connection.count": (
        "updown",
        "{connection}",
        "Connection permits held (state=used) by memstore's unit of work",
    ),
    "db.client.connection.pending_requests": (
        "updown",
        "{request}",
        "Transactions waiting for a connection permit",
    ),
    "gen_ai.client.operation.duration": ("histogram", "s", "Duration of model calls"),
    "gen_ai.client.token.usage": (
        "histogram",
        "{token}",
        "Input tokens of embedding calls, as the endpoint reported them",
    ),
    "memstore.model.calls": ("counter", "{call}", "Embedder and reranker calls"),
    "memstore.model.retries": ("counter", "{retry}", "Model endpoint attempts retried"),
    "memstore.consolidation.backlog": (
        "gauge",
        "{episode}",
        "Episodes not yet consolidated, as the last consolidation run saw them",
    ),
    "memstore.consolidation.episodes": ("counter", "{episode}", "Episodes consolidated"),
    "memstore.changes.waiters": ("updown", "{waiter}", "Live change-feed and thread waiters"),
    "memstore.changes.wakeups": ("counter", "{wakeup}", "Waiters woken by a change"),
    "memstore.changes.lag": (
        "histogram",
        "s",
        "From the commit of the newest change of a batch to its delivery to a live consumer",
    ),
}

# The semantic conventions' values of db.system(.name).
_SYSTEMS = {"sqlite": "sqlite", "postgresql": "postgresql"}


def db_system(backend: str) -> str:
    """The conventions' ``db.system.name`` of a memstore backend name."""
    return _SYSTEMS.get(backend, "other_sql")


def error_type(exc: BaseException) -> str:
    """The error's class name (a MemstoreError subclass for every error memstore raises);
    never its message, which may quote a caller's input."""
    return type(exc).__qualname__


def tenant_hash(user_id: str) -> str:
    """A tenant id as a trace may carry it: hashed (a tenant id can be personal data)."""
    digest = hashlib.sha256(b"memstore-tenant\x00" + user_id.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:16]
