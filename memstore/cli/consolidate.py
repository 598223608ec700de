"""turn unconsolidated episodes into facts (for cron or a service)

Consolidate episodes into bi-temporal facts. Exit 0 on success, 1 with the cause on
failure. Safe to run several at once.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, TextIO

from memstore.cli.command import add_command, add_flag
from memstore.cli.embedder_args import add_embedder_arguments, store_embedder_from_args
from memstore.cli.user_args import add_user_argument
from memstore.errors import MemstoreError
from memstore.schema.database import require_existing_database
from memstore.services.consolidation.consolidator import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_LEASE_SECONDS,
)
from memstore.services.consolidation.types import CandidateFact, Extractor
from memstore.types import BatchResult, ConsolidationResult, Episode

__all__ = ["register", "run"]


def _positive(kind: type) -> Any:
    def parse(text: str) -> Any:
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be positive, got {text}")
        return value

    return parse


def register(subparsers: Any) -> None:
    p = add_command(subparsers, "consolidate", run, __doc__)
    mode = p.add_mutually_exclusive_group()
    add_flag(mode, "--once", "drain the queue once and exit (default)")
    add_flag(
        mode,
        "--loop",
        "keep consolidating every --interval seconds until SIGTERM/SIGINT or --max-seconds",
    )
    p.add_argument(
        "--interval",
        type=_positive(float),
        default=60.0,
        help="seconds between passes with --loop (default 60)",
    )
    p.add_argument(
        "--batch-size",
        type=_positive(int),
        default=DEFAULT_BATCH_SIZE,
        help=f"episodes per transaction (default {DEFAULT_BATCH_SIZE})",
    )
    p.add_argument(
        "--max-seconds",
        type=_positive(float),
        help="stop starting new batches after this many seconds",
    )
    p.add_argument("--limit", type=_positive(int), help="consolidate at most this many episodes")
    add_user_argument(p, help="only this tenant (default: every tenant)")
    # Consolidated facts are embedded: with the database's embedder, or refused.
    add_embedder_arguments(p)
    p.add_argument(
        "--extractor",
        choices=["rules", "llm"],
        default="rules",
        help="rules: offline patterns (default); llm: OpenAI-compatible endpoint",
    )
    p.add_argument("--llm-url", help="chat-completions base URL (default $MEMSTORE_LLM_BASE_URL)")
    p.add_argument("--llm-model", help="model name (default $MEMSTORE_LLM_MODEL)")
    p.add_argument(
        "--llm-timeout",
        type=_positive(float),
        help="seconds per request (default $MEMSTORE_LLM_TIMEOUT or 30)",
    )
    p.add_argument(
        "--lease-seconds",
        type=_positive(float),
        default=DEFAULT_LEASE_SECONDS,
        help="SQLite claim lease; a crashed worker's episodes are retried after it "
        f"(default {DEFAULT_LEASE_SECONDS:.0f})",
    )
    # Test hook: pause after every fact write inside the batch transaction, so a
    # test can SIGKILL the process mid-batch deterministically.
    p.add_argument("--debug-write-delay", type=float, default=0.0, help=argparse.SUPPRESS)
    # Test hook: pause per episode during extraction (outside SQLite's write lock),
    # so concurrent test workers genuinely overlap.
    p.add_argument("--debug-extract-delay", type=float, default=0.0, help=argparse.SUPPRESS)


class _Slowed:
    """Test hook: an extractor that first sleeps ``delay`` seconds per episode."""

    def __init__(self, inner: Extractor, delay: float) -> None:
        self.inner = inner
        self.delay = delay
        self.name = inner.name

    async def extract(self, episodes: Sequence[Episode]) -> list[CandidateFact]:
        await asyncio.sleep(self.delay * len(episodes))
        return await self.inner.extract(episodes)


def _extractor(args: argparse.Namespace) -> Extractor:
    extractor: Extractor
    if args.extractor == "rules":
        from memstore.services.consolidation.rules import RuleExtractor

        extractor = RuleExtractor()
    else:
        from memstore.services.consolidation.llm import LLMConfig, LLMExtractor

        extractor = LLMExtractor(
            LLMConfig.from_env(
                base_url=args.llm_url, model=args.llm_model, timeout=args.llm_timeout
            )
        )
    if args.debug_extract_delay > 0:
        extractor = _Slowed(extractor, args.debug_extract_delay)
    return extractor


class _Progress:
    """A bar on a terminal, a timestamped line per batch otherwise (both on stderr)."""

    def __init__(self, total: int, stream: TextIO) -> None:
        self.total = max(total, 1)
        self.done = 0
        self.stream = stream
        self.tty = stream.isatty()
        self.started = time.monotonic()

    def __call__(self, batch: BatchResult) -> None:
        self.done += batch.processed
        if self.tty:
            width = 30
            filled = min(width, width * self.done // self.total)
            rate = self.done / max(time.monotonic() - self.started, 1e-9)
            self.stream.write(
                f"\r[{'#' * filled}{'.' * (width - filled)}] "
                f"{self.done}/{self.total} episodes  {rate:.1f}/s "
            )
        else:
            stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            self.stream.write(
                f"{stamp} batch user={batch.user_id} processed={batch.processed} "
                f"added={batch.added} reinforced={batch.reinforced} "
                f"superseded={batch.superseded} unchanged={batch.unchanged}\n"
            )
        self.stream.flush()

    def finish(self) -> None:
        if self.tty and self.done:
            self.stream.write("\n")
            self.stream.flush()


async def _run(args: argparse.Namespace) -> int:
    from memstore.store import MemoryStore

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        # Finish the batch in hand, then exit cleanly (systemd / Kubernetes stop).
        loop.add_signal_handler(sig, stop.set)

    extractor = _extractor(args)
    total = ConsolidationResult()
    started = time.monotonic()
    # Operations tools never change a schema: `memstore migrate` does.
    async with MemoryStore.open(
        args.url, embedder=store_embedder_from_args(args), auto_migrate=False
    ) as store:
        mode = f"loop every {args.interval:g}s" if args.loop else "once"
        print(
            f"memstore consolidate: {mode}, extractor={extractor.name}, "
            f"batch-size={args.batch_size}, user={args.user_id or 'all'}",
            file=sys.stderr,
            flush=True,
        )
        after_fact = None
        if args.debug_write_delay > 0:

            async def after_fact() -> None:
                await asyncio.sleep(args.debug_write_delay)

        consolidator = store.consolidator(
            extractor,
            batch_size=args.batch_size,
            lease_seconds=args.lease_seconds,
            after_fact=after_fact,
        )
        while True:
            remaining = None
            if args.max_seconds is not None:
                remaining = args.max_seconds - (time.monotonic() - started)
                if remaining <= 0:
                    break
            limit = None if args.limit is None else args.limit - total.processed
            progress = _Progress(await consolidator.pending(args.user_id), sys.stderr)
            try:
                result = await consolidator.run(
                    limit=limit,
                    user_id=args.user_id,
                    max_seconds=remaining,
                    on_batch=progress,
                    should_stop=stop.is_set,
                )
            except MemstoreError:
                progress.finish()
                print(f"partial: {_merge(total, None).summary()}", flush=True)
                raise
            progress.finish()
            _merge(total, result)
            if args.loop and result.processed:
                print(f"pass: {result.summary()}", flush=True)
            if (
                not args.loop
                or stop.is_set()
                or (limit is not None and total.processed >= args.limit)
            ):
                break
            wait = args.interval if remaining is None else min(args.interval, remaining)
            try:
                await asyncio.wait_for(stop.wait(), timeout=wait)
            except TimeoutError:
                pass
            if stop.is_set():
                break
    total.duration = time.monotonic() - started
    print(total.summary(), flush=True)
    return 0


def _merge(total: ConsolidationResult, part: ConsolidationResult | None) -> ConsolidationResult:
    if part is not None:
        total.processed += part.processed
        total.added += part.added
        total.reinforced += part.reinforced
        total.superseded += part.superseded
        total.unchanged += part.unchanged
        total.batches += part.batches
        total.users |= part.users
    return total


def run(args: argparse.Namespace) -> int:
    require_existing_database(args.url)  # never create one behind a mistyped path
    return asyncio.run(_run(args))
