"""A Postgres URL as teams paste it (libpq's query parameters) made into asyncpg's arguments.

Dashboards hand out ``postgres://user:pw@host/db?sslmode=require&connect_timeout=10``;
asyncpg takes none of those names as keywords. :func:`postgres_connect_args` splits such
a URL into the URL SQLAlchemy connects with and the keywords of ``asyncpg.connect``
(``ssl``, ``timeout``, ``server_settings``, ``target_session_attrs``), with libpq's
meaning: ``sslmode`` and the certificate files as libpq reads them (also from
``$PGSSLROOTCERT`` / ``~/.postgresql/root.crt``), ``options`` as ``-c name=value``
settings. A parameter it does not know is refused by name; no message quotes a password.
"""

from __future__ import annotations

import os
import re
import ssl
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

from sqlalchemy.engine import URL

from memstore.db.engine import redacted
from memstore.errors import ConfigurationError

__all__ = ["LIBPQ_PARAMETERS", "SSLMODES", "postgres_connect_args"]

SSLMODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
# What the URL may carry beyond user, password, host, port and database.
LIBPQ_PARAMETERS = (
    "sslmode",
    "sslrootcert",
    "sslcert",
    "sslkey",
    "connect_timeout",
    "application_name",
    "options",
    "target_session_attrs",
    "channel_binding",
    "gssencmode",
)
# Passed through untouched: SQLAlchemy's asyncpg dialect reads them (``host`` also
# names a socket directory or several hosts), or asyncpg takes them as they are.
_PASSED_THROUGH = frozenset(
    {"host", "port", "user", "password", "database", "prepared_statement_cache_size"}
)
_TARGET_SESSION_ATTRS = ("any", "primary", "standby", "prefer-standby", "read-write", "read-only")
# Hints for parameters other tools put into URLs.
_INSTEAD = {
    "schema": "use options=-c search_path=NAME",
    "search_path": "use options=-c search_path=NAME",
    "pgbouncer": "drop it (a Prisma setting); with a transaction-mode pooler add "
    "prepared_statement_cache_size=0",
    "dbname": "put the database name in the URL's path",
}
_SETTING_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")
_DOCS = "see docs/configuration.md#postgres-urls"


def postgres_connect_args(url: URL) -> tuple[URL, dict[str, Any]]:
    """``url`` without the libpq parameters, and the ``asyncpg.connect`` keywords they mean.

    Raises :class:`ConfigurationError` naming the parameter (never its value when
    that could be a secret) for anything memstore cannot honour.
    """
    query = _single_values(url)
    unknown = [key for key in query if key not in LIBPQ_PARAMETERS and key not in _PASSED_THROUGH]
    # `ssl` is asyncpg's own name for sslmode, which SQLAlchemy users write.
    if "ssl" in unknown:
        unknown.remove("ssl")
        if query.get("sslmode", query["ssl"]) != query["ssl"]:
            _refuse(url, "'ssl' and 'sslmode' disagree; give one of them")
        query.setdefault("sslmode", query["ssl"])
    if unknown:
        name = unknown[0]
        instead = _INSTEAD.get(
            name, f"remove it; memstore understands {', '.join(LIBPQ_PARAMETERS)}"
        )
        _refuse(url, f"unsupported parameter {name!r} in the database URL: {instead}")
    kwargs: dict[str, Any] = {}
    mode = _ssl(url, query)
    if mode is not None:
        kwargs["ssl"] = mode
    if "connect_timeout" in query:
        kwargs["timeout"] = _timeout(url, query["connect_timeout"])
    settings = _options(url, query.get("options", ""))
    if "application_name" in query:
        settings["application_name"] = query["application_name"]
    if settings:
        kwargs["server_settings"] = settings
    if "target_session_attrs" in query:
        attrs = query["target_session_attrs"]
        if attrs not in _TARGET_SESSION_ATTRS:
            _refuse(url, f"target_session_attrs must be one of {', '.join(_TARGET_SESSION_ATTRS)}")
        kwargs["target_session_attrs"] = attrs
    _unsupported_requirement(url, query, "channel_binding", "asyncpg cannot bind SCRAM to TLS")
    _unsupported_requirement(url, query, "gssencmode", "asyncpg has no GSSAPI encryption")
    consumed = [key for key in url.query if key in LIBPQ_PARAMETERS or key == "ssl"]
    return url.difference_update_query(consumed), kwargs


def _single_values(url: URL) -> dict[str, str]:
    query: dict[str, str] = {}
    for key, value in url.query.items():
        if not isinstance(value, str):  # repeated: only `host` may be (several hosts)
            if key != "host":
                _refuse(url, f"parameter {key!r} is given {len(value)} times; give it once")
            continue
        query[key] = value
    return query


def _refuse(url: URL, reason: str) -> NoReturn:
    raise ConfigurationError(f"{reason} ({_DOCS})", url=redacted(url))


def _unsupported_requirement(url: URL, query: Mapping[str, str], name: str, why: str) -> None:
    value = query.get(name)
    if value is None or value in ("disable", "prefer"):
        return  # what asyncpg does anyway
    if value == "require":
        _refuse(url, f"{name}=require cannot be met: {why}; use {name}=prefer or drop it")
    _refuse(url, f"{name} must be disable, prefer or require")


def _timeout(url: URL, raw: str) -> float:
    try:
        seconds = float(raw)
    except ValueError:
        seconds = float("nan")
    if not seconds > 0 or seconds == float("inf"):
        # libpq waits forever for 0; memstore bounds every wait.
        _refuse(url, f"connect_timeout must be a positive number of seconds, not {raw!r}")
    return seconds


def _options(url: URL, raw: str) -> dict[str, str]:
    """libpq's ``options`` as settings: ``-c name=value``, its long form, ``\\`` escapes."""
    settings: dict[str, str] = {}
    words = _words(raw)
    while words:
        word = words.pop(0)
        if word == "-c" and words:
            word = words.pop(0)
        elif word.startswith("-c"):
            word = word[2:]
        elif word.startswith("--"):
            word = word[2:]
            name, sep, value = word.partition("=")
            word = name.replace("-", "_") + sep + value
        else:
            _refuse(url, "options may hold only -c name=value settings")
        name, sep, value = word.partition("=")
        if not sep or not _SETTING_NAME.match(name):
            _refuse(url, "options may hold only -c name=value settings")
        if name.lower().startswith("memstore."):
            # A session default for the tenant setting would survive the checkout RESET.
            _refuse(url, f"options may not set {name}: memstore sets it per call")
        settings[name] = value
    return settings


def _words(raw: str) -> list[str]:
    words: list[str] = []
    current: list[str] = []
    chars = iter(raw)
    for char in chars:
        if char == "\\":
            current.append(next(chars, ""))
        elif char.isspace():
            if current:
                words.append("".join(current))
            current = []
        else:
            current.append(char)
    if current:
        words.append("".join(current))
    return words


def _ssl(url: URL, query: Mapping[str, str]) -> str | ssl.SSLContext | None:
    """asyncpg's ``ssl``: the mode itself up to ``prefer``, a context from ``require`` on."""
    mode = query.get("sslmode")
    rootcert = query.get("sslrootcert")
    files = [name for name in ("sslrootcert", "sslcert", "sslkey") if name in query]
    if mode is None and rootcert == "system":
        mode = "verify-full"  # as libpq: the system's roots are only worth checking fully
    if mode is None or mode in ("disable", "allow", "prefer"):
        if files:
            # libpq would connect unverified here; whoever names a root cert wants it checked.
            _refuse(url, f"{files[0]} needs sslmode=require, verify-ca or verify-full")
        return mode  # None: asyncpg's default ($PGSSLMODE, else prefer)
    if mode not in SSLMODES:
        _refuse(url, f"sslmode must be one of {', '.join(SSLMODES)}")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if ssl.HAS_ALPN:
        context.set_alpn_protocols(["postgresql"])
    verified = _load_roots(url, context, mode, rootcert)
    context.check_hostname = mode == "verify-full"
    context.verify_mode = ssl.CERT_REQUIRED if verified else ssl.CERT_NONE
    _load_client_cert(url, context, query)
    return context


def _load_roots(url: URL, context: ssl.SSLContext, mode: str, rootcert: str | None) -> bool:
    """Load the root certificates; False when ``require`` finds none (then nothing is checked)."""
    if rootcert == "system":
        if mode != "verify-full":
            _refuse(url, "sslrootcert=system needs sslmode=verify-full")
        context.load_default_certs()
        return True
    path = rootcert or os.environ.get("PGSSLROOTCERT") or _home_file("root.crt")
    if not path:
        if mode == "require":
            return False  # libpq's require: encrypted, server not authenticated
        _refuse(
            url,
            f"sslmode={mode} needs the certificate of the authority that signed the "
            "server's: add sslrootcert=/path/to/ca.pem (or sslrootcert=system)",
        )
    try:
        context.load_verify_locations(cafile=path)
    except (OSError, ssl.SSLError) as exc:
        _refuse(url, f"sslrootcert: cannot load {path!r} ({_reason(exc)})")
    return True


def _load_client_cert(url: URL, context: ssl.SSLContext, query: Mapping[str, str]) -> None:
    cert = query.get("sslcert") or os.environ.get("PGSSLCERT") or _home_file("postgresql.crt")
    key = query.get("sslkey") or os.environ.get("PGSSLKEY") or _home_file("postgresql.key")
    if not cert:
        if "sslkey" in query:
            _refuse(url, "sslkey needs sslcert (the client certificate it belongs to)")
        return
    try:
        # A key that needs a passphrase fails here rather than prompting on a terminal.
        context.load_cert_chain(cert, keyfile=key or None, password=lambda: b"")
    except (OSError, ssl.SSLError) as exc:
        _refuse(url, f"sslcert/sslkey: cannot load {cert!r} ({_reason(exc)})")


def _home_file(name: str) -> str | None:
    try:
        path = Path.home() / ".postgresql" / name
    except RuntimeError:  # no home directory
        return None
    return str(path) if path.is_file() else None


def _reason(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or getattr(exc, "reason", None) or type(exc).__name__
