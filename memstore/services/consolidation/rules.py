"""The offline, deterministic extractor: regular patterns for common personal facts.

It reads only what the user said (``episode.input``), one sentence at a time,
and only plain first-person statements: questions, conditionals and negated
statements yield nothing, because a wrong fact is worse than a missing one.
First person resolves to the speaking tenant (``episode.user_id``; the
anonymous tenant's subject is ``"user"``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta

from memstore.core.tenancy import speaker_name
from memstore.services.consolidation.dates import DATE_PHRASE, resolve_date
from memstore.services.consolidation.types import CandidateFact
from memstore.types import Episode

__all__ = ["ANONYMOUS_SUBJECT", "RuleExtractor"]

ANONYMOUS_SUBJECT = "user"

# A proper-noun phrase: "Paris", "New York City", "Acme Corp.", "the Bay Area".
_PN = (
    r"(?:the\s+)?(?!I\b)[A-Z][\w'&.-]*(?:\s+(?:(?:of|de|del|la|le|du|von|van|and|&)\s+)?"
    r"(?!I\b)[A-Z][\w'&-]*)*"
)
# Where a free-text object stops: punctuation or a new clause.
_END = (
    r"(?=\s*(?:[,.;:!?)]|$|\s(?:but|because|since|although|though|and\s+I|so|when|while|"
    r"if|which|who|as\s+well|yesterday|today|tonight|tomorrow|now|lately|anymore|too|"
    r"(?:last|this|next)\s+\w+|a\s+lot|so\s+much|very\s+much)\b))"
)
_OBJ = r"[^,.;:!?()]+?"
_I = (
    r"\bI\s+(?:(?:just|recently|finally|also|now|actually|really|still|already|currently|"
    r"totally|absolutely|truly|honestly|kind\s+of|sort\s+of)\s+)*"
)
_OCCUPATIONS = (
    "engineer|developer|programmer|designer|architect|teacher|professor|lecturer|nurse|"
    "doctor|physician|surgeon|dentist|pharmacist|manager|director|lawyer|attorney|accountant|"
    "analyst|scientist|researcher|writer|author|journalist|editor|student|chef|cook|baker|"
    "consultant|founder|ceo|cto|cfo|artist|musician|photographer|pilot|driver|mechanic|"
    "electrician|plumber|carpenter|farmer|librarian|therapist|psychologist|economist|"
    "salesperson|recruiter|administrator|technician|officer|agent|intern|translator|"
    "veterinarian|vet|paramedic|firefighter|waiter|waitress|barista|cashier|entrepreneur|"
    "freelancer|data scientist|product owner|secretary|assistant"
)
_TITLE = rf"(?:[a-z][\w-]*\s+){{0,3}}(?:{_OCCUPATIONS})s?"
_RELATIONS = {
    "wife": "married_to",
    "husband": "married_to",
    "spouse": "married_to",
    "partner": "partner",
    "girlfriend": "partner",
    "boyfriend": "partner",
    "fiancee": "partner",
    "fiancée": "partner",
    "fiance": "partner",
    "fiancé": "partner",
    "mother": "mother",
    "mom": "mother",
    "mum": "mother",
    "father": "father",
    "dad": "father",
    "sister": "sister",
    "brother": "brother",
    "son": "son",
    "daughter": "daughter",
    "best friend": "best_friend",
    "friend": "friend",
    "boss": "boss",
    "manager": "boss",
    "colleague": "colleague",
    "coworker": "colleague",
    "roommate": "roommate",
    "flatmate": "roommate",
    "cousin": "cousin",
    "grandmother": "grandmother",
    "grandfather": "grandfather",
    "grandma": "grandmother",
    "grandpa": "grandfather",
    "cat": "pet",
    "dog": "pet",
}
_REL = "|".join(sorted((re.escape(r) for r in _RELATIONS), key=len, reverse=True))
# The word lists below are grammar of the extraction patterns, not keyword stop words
# (core.text.STOPWORDS drops words from search; these decide what a sentence states).
# Things one "has" that are not possessions.
_NOT_OWNED = frozenset(
    "meeting question problem idea appointment call feeling lot bit headache cold fever doubt "
    "job chance minute moment deadline interview plan date question favour favor suggestion "
    "request issue concern look great good nice busy hard long few couple day week weekend "
    "break rest shower nap drink coffee beer meal lunch dinner breakfast talk chat word point "
    "dream reason choice class lesson exam test flight".split()
)
_PRONOUNS = frozenset("it that this them you him her these those one everything nothing".split())
_NOT_NAMES = frozenset("Sorry Fine Good Great Okay OK Back Here Ready Done Not So Just".split())
_SKIP_SENTENCE = re.compile(
    r"^\s*(?:if|when|whether|should|would|could|maybe|perhaps|do|does|did|can|are|is|will\s+you|"
    r"what|where|who|why|how|suppose|imagine)\b",
    re.IGNORECASE,
)
_NEGATED = re.compile(r"\b(?:not|never|no\s+longer|n't|neither|nor)\b", re.IGNORECASE)
_CONTRACTIONS = [
    (r"\bI'm\b", "I am"),
    (r"\bI've\b", "I have"),
    (r"\bI'll\b", "I will"),
    (r"\bI'd\b", "I would"),
    (r"\bdon't\b", "do not"),
    (r"\bdoesn't\b", "does not"),
    (r"\bcan't\b", "cannot"),
    (r"\bwon't\b", "will not"),
    (r"\bdidn't\b", "did not"),
    (r"\bname's\b", "name is"),
    (r"\bgonna\b", "going to"),
]


@dataclass(frozen=True)
class _Hit:
    predicate: str
    object: str
    confidence: float
    valid_to: datetime | None = None
    subject: str | None = None  # None: the speaking user


Builder = Callable[[re.Match[str], datetime], Iterator[_Hit]]


def _clean(value: str, *, drop_article: bool = False) -> str:
    value = " ".join(value.split()).strip(" '\"-")
    value = re.sub(r"[.]+$", "", value) if not value.endswith(("Jr.", "Inc.", "Co.")) else value
    if drop_article:
        value = re.sub(r"^(?:a|an|the|some|my)\s+", "", value, flags=re.IGNORECASE)
    return value


def _simple(predicate: str, confidence: float, *, drop_article: bool = False) -> Builder:
    def build(m: re.Match[str], _spoken: datetime) -> Iterator[_Hit]:
        obj = _clean(m["obj"], drop_article=drop_article)
        if obj and obj.lower() not in _PRONOUNS:
            yield _Hit(predicate, obj, confidence)

    return build


def _name(m: re.Match[str], _spoken: datetime) -> Iterator[_Hit]:
    name = _clean(m["obj"])
    if name and name.split()[0] not in _NOT_NAMES:
        yield _Hit("name", name, 0.9)


def _job(m: re.Match[str], _spoken: datetime) -> Iterator[_Hit]:
    yield _Hit("job_title", _clean(m["obj"]).lower(), 0.85)
    if m["org"]:
        yield _Hit("works_at", _clean(m["org"]), 0.85)


def _relation(m: re.Match[str], _spoken: datetime) -> Iterator[_Hit]:
    yield _Hit(_RELATIONS[m["rel"].lower()], _clean(m["obj"]), 0.85)


def _owns(m: re.Match[str], _spoken: datetime) -> Iterator[_Hit]:
    obj = _clean(m["obj"], drop_article=True)
    head = re.sub(r"^(?:new|old|little|big|small|second|own)\s+", "", obj.lower()).split()
    if head and head[0] not in _NOT_OWNED and obj.lower() not in _PRONOUNS:
        count = m["count"].lower()
        yield _Hit("owns", obj if count in ("a", "an", "my own") else f"{count} {obj}", 0.8)


def _plan(m: re.Match[str], spoken: datetime) -> Iterator[_Hit]:
    when = resolve_date(m["when"], spoken)
    what = _clean(m["obj"])
    verb = m["verb"].lower().split()
    # "am going to visit X" -> "visit X"; "am flying to X" -> "flying to X".
    lead = "" if verb[-1] in ("to", "will") else verb[-1] + " "
    if when is None or not what:
        return
    ends = datetime.combine(when + timedelta(days=1), time(), tzinfo=UTC)
    yield _Hit(
        "plans",
        f"{lead}{what} on {when.isoformat()}",
        0.8,
        valid_to=ends if ends > spoken else None,
    )


_RULES: list[tuple[re.Pattern[str], Builder]] = [
    (re.compile(rf"(?i:\bmy\s+name\s+is|\bcall\s+me|{_I}am\s+called)\s+(?P<obj>{_PN})"), _name),
    (
        re.compile(
            r"^(?i:(?:hi|hello|hey)(?:\s+there)?[,!]?\s+(?:I\s+am|this\s+is|it\s+is))\s+"
            r"(?P<obj>(?!I\b)[A-Z][\w'-]*)(?=\s*(?:[,.!]|$))"
        ),
        _name,
    ),
    (re.compile(r"^(?P<obj>(?!I\b)[A-Z][\w'-]*)\s+(?i:here)\s*[,.!]"), _name),
    (
        re.compile(
            rf"{_I}(?i:live|am\s+living|have\s+been\s+living|am\s+based|reside|am\s+settled)"
            rf"\s+in\s+(?P<obj>{_PN})"
        ),
        _simple("lives_in", 0.9),
    ),
    (
        re.compile(
            rf"{_I}(?i:(?:have\s+)?moved|(?:have\s+)?relocated|settled)\s+(?:back\s+)?to\s+"
            rf"(?P<obj>{_PN})"
        ),
        _simple("lives_in", 0.9),
    ),
    (
        re.compile(rf"{_I}(?i:am\s+from|come\s+from|grew\s+up\s+in)\s+(?P<obj>{_PN})"),
        _simple("hometown", 0.85),
    ),
    (re.compile(rf"{_I}(?i:was\s+born\s+in)\s+(?P<obj>{_PN})"), _simple("born_in", 0.9)),
    (
        re.compile(
            rf"{_I}(?i:work|am\s+working|have\s+been\s+working)\s+(?i:at|for)\s+"
            rf"(?P<obj>{_PN})"
        ),
        _simple("works_at", 0.85),
    ),
    (
        re.compile(
            rf"{_I}(?i:joined|started\s+at|(?:got|took|accepted|started)\s+(?:a\s+|the\s+)?"
            rf"(?:new\s+)?(?:job|position|role)\s+(?:at|with))\s+(?P<obj>{_PN})"
        ),
        _simple("works_at", 0.85),
    ),
    (
        re.compile(
            rf"(?i:\b(?:a|my|the)\s+(?:new\s+)?(?:job|position|role)\s+at)\s+(?P<obj>{_PN})"
        ),
        _simple("works_at", 0.8),
    ),
    (
        re.compile(
            rf"{_I}(?i:work|am\s+working)\s+as\s+(?i:an?)\s+(?P<obj>(?i:{_TITLE}))\b"
            rf"(?:\s+(?i:at|for)\s+(?P<org>{_PN}))?"
        ),
        _job,
    ),
    (
        re.compile(
            rf"{_I}(?i:am)\s+(?i:an?)\s+(?P<obj>(?i:{_TITLE}))\b"
            rf"(?:\s+(?i:at|for)\s+(?P<org>{_PN}))?"
        ),
        _job,
    ),
    (
        re.compile(
            rf"{_I}(?i:hate|dislike|detest|loathe|do\s+not\s+like|do\s+not\s+enjoy|"
            rf"cannot\s+stand|am\s+not\s+(?:a\s+)?(?:big\s+)?fan\s+of)\s+(?P<obj>{_OBJ}){_END}"
        ),
        _simple("dislikes", 0.8, drop_article=True),
    ),
    (
        re.compile(
            rf"{_I}(?i:love|like|enjoy|adore|am\s+into|am\s+(?:a\s+)?(?:big\s+|huge\s+)?"
            rf"fan\s+of|am\s+passionate\s+about)\s+(?P<obj>{_OBJ}){_END}"
        ),
        _simple("likes", 0.8, drop_article=True),
    ),
    (
        re.compile(rf"{_I}(?i:am\s+allergic\s+to)\s+(?P<obj>{_OBJ}){_END}"),
        _simple("allergic_to", 0.9, drop_article=True),
    ),
    (
        re.compile(rf"{_I}(?i:married|am\s+married\s+to)\s+(?P<obj>{_PN})"),
        _simple("married_to", 0.9),
    ),
    (
        re.compile(rf"{_I}(?i:am\s+engaged\s+to|am\s+dating)\s+(?P<obj>{_PN})"),
        _simple("partner", 0.85),
    ),
    (
        re.compile(
            rf"(?i:\bmy\s+(?P<rel>{_REL}))(?:(?i:'s\s+name\s+is|\s+is\s+called|\s+is\s+named|"
            rf"\s+named|\s+called|\s+is),?)?\s+(?P<obj>{_PN})"
        ),
        _relation,
    ),
    (
        re.compile(
            rf"{_I}(?i:have\s+got|have|own|bought|got|adopted)\s+"
            rf"(?P<count>(?i:an?|two|three|four|five|\d+|my\s+own))\s+(?P<obj>{_OBJ}){_END}"
        ),
        _owns,
    ),
    (
        re.compile(
            rf"{_I}(?P<verb>(?i:am\s+going\s+to|am\s+planning\s+to|plan\s+to|am\s+about\s+to|"
            rf"will|am\s+hoping\s+to|am\s+(?:flying|travelling|traveling|heading|driving|"
            rf"moving|going|visiting|starting|leaving)))\s+(?P<obj>{_OBJ})\s+"
            rf"(?P<when>(?i:{DATE_PHRASE})){_END}"
        ),
        _plan,
    ),
]

_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")


def _sentences(text: str) -> Iterator[str]:
    text = text.replace("\u2019", "'").replace("\u2018", "'")
    for pattern, replacement in _CONTRACTIONS:
        text = re.sub(pattern, replacement, text, flags=re.IGNORECASE)
    for sentence in _SENTENCE_SPLIT.split(text):
        sentence = sentence.strip()
        if not sentence or sentence.endswith("?") or _SKIP_SENTENCE.match(sentence):
            continue
        yield sentence


def _negated_before(sentence: str, start: int) -> bool:
    # "I do not like" is its own rule; a negation between the clause start and
    # the match ("I have never lived in…", "not that I moved to…") vetoes it.
    clause_start = max(sentence.rfind(sep, 0, start) for sep in (",", ";", " but ", " and "))
    return bool(_NEGATED.search(sentence[clause_start + 1 : start]))


class RuleExtractor:
    """Deterministic pattern extractor; the default, needs no network."""

    name = "rules"

    def __init__(self, *, anonymous_subject: str = ANONYMOUS_SUBJECT) -> None:
        self.anonymous_subject = anonymous_subject

    def extract_text(
        self, text: str, *, spoken: datetime
    ) -> list[tuple[str | None, str, str, float, datetime | None]]:
        """(subject or None for the speaker, predicate, object, confidence, valid_to) found."""
        found: dict[
            tuple[str | None, str, str], tuple[str | None, str, str, float, datetime | None]
        ] = {}
        for sentence in _sentences(text):
            for pattern, build in _RULES:
                for match in pattern.finditer(sentence):
                    if _negated_before(sentence, match.start()) and "not" not in match[0]:
                        continue
                    for hit in build(match, spoken):
                        key = (hit.subject, hit.predicate, hit.object.casefold())
                        found.setdefault(
                            key,
                            (hit.subject, hit.predicate, hit.object, hit.confidence, hit.valid_to),
                        )
        return list(found.values())

    async def extract(self, episodes: Sequence[Episode]) -> list[CandidateFact]:
        out: list[CandidateFact] = []
        for episode in episodes:
            speaker = speaker_name(episode.user_id, self.anonymous_subject)
            for subject, predicate, obj, confidence, valid_to in self.extract_text(
                episode.input, spoken=episode.occurred_at
            ):
                out.append(
                    CandidateFact(
                        subject=subject or speaker,
                        predicate=predicate,
                        object=obj,
                        confidence=confidence,
                        valid_from=episode.occurred_at,
                        valid_to=valid_to,
                        episode_id=episode.id,
                    )
                )
        return out
