"""measure evidence recall of model configurations on a conversation file

Store a LoCoMo, LongMemEval or plain JSONL file (docs/eval.md) under each --config and
ask its questions: evidence recall@1/5/10 and the evidence inside context() at token
budgets, with 95 % bootstrap intervals, overall and per category. Runs on a private
temporary SQLite database, removed afterwards; --url writes to an existing database
only with --allow-existing. Prints a Markdown table; --json and --svg write the figures
and a plot of recall@k.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from memstore.cli.command import add_command, add_flag
from memstore.cli.embedder_args import add_embedder_arguments, spec_from_args
from memstore.errors import ConfigurationError

__all__ = ["register", "run"]


def _positive(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


def register(subparsers: Any) -> None:
    p = add_command(
        subparsers,
        "eval",
        run,
        __doc__,
        url_help="an existing database to write the evaluation's tenants into (needs "
        "--allow-existing; default: a temporary SQLite database)",
    )
    p.add_argument("data", help="LoCoMo / LongMemEval JSON, or .jsonl of turns and questions")
    p.add_argument(
        "--format", default="auto", help="auto (default), locomo, longmemeval, longchat or jsonl"
    )
    p.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="NAME=SPEC",
        help="a configuration, e.g. base=hashing or e5=openai,model=M,base_url=U,"
        "query_form=query,document_form=passage,reranker=http,reranker_model=R,"
        "reranker_base_url=V,candidates=30 (repeatable; default: hashing)",
    )
    p.add_argument("--configs", metavar="FILE", help='JSON {"name": {"embedder": ...}}')
    add_flag(
        p,
        "--allow-existing",
        "with --url: write the tenants memstore-eval-<n> there (forgotten before and after)",
    )
    add_embedder_arguments(
        p, default="hashing", purpose="embedder of the one configuration run without --config"
    )
    p.add_argument(
        "--budgets",
        nargs="+",
        type=_positive,
        default=[500, 1000, 2000],
        help="token budgets of context() (default 500 1000 2000)",
    )
    p.add_argument("--category", action="append", default=[], help="only this category")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--resamples", type=_positive, default=1000, help="bootstrap resamples")
    add_flag(
        p,
        "--drop-unknown-evidence",
        "drop evidence ids that name no turn (counted) instead of failing",
    )
    p.add_argument("--json", metavar="PATH", help="write the figures as JSON")
    p.add_argument("--svg", metavar="PATH", help="write a plot of recall@k per configuration")
    add_flag(p, "--quiet", "no progress bar")


def run(args: argparse.Namespace) -> int:
    from memstore import evaluation
    from memstore.evaluation.progress import stderr_progress

    if args.url is not None and not args.allow_existing:
        raise ConfigurationError(
            "--url writes the evaluation's tenants into that database; add "
            "--allow-existing to mean it, or leave --url out for a temporary database"
        )
    if args.allow_existing and args.url is None:
        raise ConfigurationError("--allow-existing needs --url")
    if args.embedder is not None and (args.config or args.configs):
        raise ConfigurationError(
            "--embedder names the one configuration run without --config; put the "
            "embedder in each --config spec instead",
            setting="config",
        )
    configs = [evaluation.parse_config(c) for c in args.config]
    if args.configs:
        configs += evaluation.load_configs(args.configs)
    if not configs:
        spec = spec_from_args(args)
        assert spec is not None  # the default is hashing
        configs = [
            evaluation.EvalConfig(
                spec.name, spec.name, model=spec.model, base_url=spec.base_url, dim=spec.dim
            )
        ]
    dataset = evaluation.load_dataset(
        args.data, args.format, drop_unknown_evidence=args.drop_unknown_evidence
    ).only(args.category)
    report = asyncio.run(
        evaluation.evaluate(
            dataset,
            configs,
            url=args.url,
            budgets=args.budgets,
            seed=args.seed,
            resamples=args.resamples,
            progress=None if args.quiet else stderr_progress,
        )
    )
    report["dataset"]["path"] = args.data
    print(evaluation.markdown(report["configurations"], budgets=args.budgets), end="")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as file:
            json.dump(report, file, indent=2)
            file.write("\n")
    if args.svg:
        with open(args.svg, "w", encoding="utf-8") as file:
            file.write(evaluation.recall_svg(report["configurations"]))
    return 0
