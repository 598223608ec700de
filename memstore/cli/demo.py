from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    demo = subparsers.add_parser("demo", help="run the short end-to-end demo")
    demo.add_argument(
        "--url", help="database URL (default: a fresh SQLite file in a new temporary directory)"
    )
    demo.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from memstore.demo import main

    main(args.url)
    return 0
