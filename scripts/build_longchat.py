"""Build a long-chat recall set from LongMemEval's oracle split (public, MIT licence).

LongMemEval (Wu et al., ICLR 2025) holds user-assistant chats whose messages are
often multi-paragraph answers (median ~550 characters, a third over 1,000), with
questions whose evidence messages are marked ``has_answer``. Its oracle split keeps
only each question's evidence sessions. This script pools the sessions of a
deterministic subset of questions into one chat history (the other questions'
sessions are each question's distractors), one message per episode, and keeps each
question's evidence messages: what ``scripts/eval_longchat.py`` asks.

The source is a copy of the oracle split, either one ``longmemeval_oracle.json`` or a
directory of per-question JSON files (the form the public repository
``hussainzs/Memoria`` keeps under ``evaluations/data/lme_jsons``, files ``<n>_<id>.json``
where ``n`` is the number of sessions; its ``<n>`` >= 38 files are the larger splits
and are skipped). ``--git`` reads that directory from a bare git repository at
``--rev``, as fetched, without a work tree:

    python scripts/build_longchat.py --git /path/to/Memoria.git \\
        --under evaluations/data/lme_jsons --out /tmp/longchat.json

Abstention questions (``_abs``) and questions without evidence messages are left
out. Questions are taken in the order of a hash of their id until ``--messages``
messages are pooled (default 3,000; the whole oracle split is 10,866), so the same
source gives the same set. Nothing here is committed: the set is rebuilt from the
source, whose repository and commit it records. ``--exclude`` builds a held-out
set beside others: no question and no message of those sets in it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ORACLE_SESSIONS = {"1", "2", "3", "4", "5", "6"}


def _is_oracle_file(name: str) -> bool:
    base = name.rsplit("/", 1)[-1]
    return base.endswith(".json") and base.split("_", 1)[0] in ORACLE_SESSIONS


def _from_git(repo: str, rev: str, under: str) -> Iterator[dict[str, Any]]:
    listing = subprocess.run(
        ["git", "-C", repo, "ls-tree", "-r", "--name-only", rev, under],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for name in sorted(n for n in listing if _is_oracle_file(n)):
        shown = subprocess.run(
            ["git", "-C", repo, "show", f"{rev}:{name}"], capture_output=True, check=True
        )
        yield json.loads(shown.stdout)


def _from_path(path: Path) -> Iterator[dict[str, Any]]:
    if path.is_file():
        yield from json.loads(path.read_text())
        return
    for file in sorted(path.glob("*.json")):
        if _is_oracle_file(file.name):
            yield json.loads(file.read_text())


def _order(question_id: str) -> str:
    return hashlib.sha1(question_id.encode()).hexdigest()


def build(
    items: list[dict[str, Any]], max_messages: int, exclude: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Pool the sessions of questions taken in hash order until ``max_messages``.

    ``exclude``, sets this script built, leaves out their questions and every
    question sharing a session with them: the result shares neither a question nor
    a message with any of them (a held-out set).
    """
    taken_questions = {q["id"] for x in exclude or [] for q in x["questions"]}
    taken_sessions = {m["session"] for x in exclude or [] for m in x["messages"]}
    usable = [
        q
        for q in items
        if not q["question_id"].endswith("_abs")
        and any(t.get("has_answer") for s in q["haystack_sessions"] for t in s)
        and q["question_id"] not in taken_questions
        and not taken_sessions.intersection(q["haystack_session_ids"])
    ]
    usable.sort(key=lambda q: _order(q["question_id"]))
    sessions: dict[str, dict[str, Any]] = {}
    questions: list[dict[str, Any]] = []
    count = 0
    for q in usable:
        new = [
            (sid, date, turns)
            for sid, date, turns in zip(
                q["haystack_session_ids"],
                q["haystack_dates"],
                q["haystack_sessions"],
                strict=True,
            )
            if sid not in sessions
        ]
        if count and count + sum(len(t) for _, _, t in new) > max_messages:
            continue
        evidence = []
        for sid, date, turns in new:
            sessions[sid] = {"id": sid, "date": date, "turns": turns}
            count += len(turns)
        for sid, turns in zip(q["haystack_session_ids"], q["haystack_sessions"], strict=True):
            evidence += [f"{sid}/{i}" for i, t in enumerate(turns) if t.get("has_answer")]
        questions.append(
            {
                "id": q["question_id"],
                "type": q["question_type"],
                "question": q["question"],
                "evidence": evidence,
            }
        )
    messages = [
        {
            "id": f"{s['id']}/{i}",
            "session": s["id"],
            "date": s["date"],
            "role": t["role"],
            "content": t["content"],
        }
        for s in sessions.values()
        for i, t in enumerate(s["turns"])
    ]
    return {"messages": messages, "questions": questions}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("source", nargs="?", help="longmemeval_oracle.json or a directory")
    parser.add_argument("--git", help="a bare git repository holding the per-question files")
    parser.add_argument("--rev", default="HEAD")
    parser.add_argument("--under", default="evaluations/data/lme_jsons")
    parser.add_argument("--messages", type=int, default=3000)
    parser.add_argument("--out", default="/tmp/longchat.json")
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        help="a set built by this script: share no question or message with it (repeatable)",
    )
    args = parser.parse_args()
    if args.git:
        commit = subprocess.run(
            ["git", "-C", args.git, "rev-parse", args.rev], capture_output=True, text=True
        ).stdout.strip()
        items = list(_from_git(args.git, args.rev, args.under))
        source = {"git": args.git, "commit": commit, "under": args.under}
    elif args.source:
        items = list(_from_path(Path(args.source)))
        source = {"path": args.source}
    else:
        parser.error("give a source path or --git")
    exclude = [json.loads(Path(x).read_text()) for x in args.exclude]
    built = build(items, args.messages, exclude)
    built["source"] = source
    Path(args.out).write_text(json.dumps(built))
    chars = sorted(len(m["content"]) for m in built["messages"])
    print(
        f"{len(built['questions'])} questions, {len(built['messages'])} messages "
        f"(median {chars[len(chars) // 2]} characters, {sum(c > 1000 for c in chars)} over "
        f"1,000), from {len(items)} oracle items -> {args.out}"
    )


if __name__ == "__main__":
    main()
