"""The figures of ``memstore eval``: bootstrap intervals on known cases and against a
plain re-implementation, the recall@k SVG, and configuration specs."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from memstore.errors import ConfigurationError
from memstore.evaluation import (
    EvalConfig,
    QuestionScores,
    bootstrap,
    load_configs,
    markdown,
    parse_config,
    recall_svg,
    summarise,
)
from memstore.evaluation.metrics import recall_at

SVG = "{http://www.w3.org/2000/svg}"


def test_all_hits_interval_is_one_one_and_all_misses_zero_zero() -> None:
    out = bootstrap({"hit": [1.0] * 25, "miss": [0.0] * 25}, seed=3, resamples=200)
    assert (out["hit"].mean, out["hit"].low, out["hit"].high, out["hit"].n) == (1, 1, 1, 25)
    assert (out["miss"].low, out["miss"].high) == (0, 0)


def test_one_question_has_no_spread() -> None:
    (estimate,) = bootstrap({"r": [0.5]}, resamples=50).values()
    assert (estimate.mean, estimate.low, estimate.high) == (0.5, 0.5, 0.5)


def test_two_questions_hit_and_miss_span_the_whole_range() -> None:
    # A resample of [0, 1] has mean 0, 1/2 or 1 with chances 1/4, 1/2, 1/4: with 1,000
    # draws both tails hold far more than 2.5 % each, so the interval is [0, 1].
    estimate = bootstrap({"r": [0.0, 1.0]}, seed=0, resamples=1000)["r"]
    assert (estimate.mean, estimate.low, estimate.high) == (0.5, 0.0, 1.0)


def _plain_percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    position = p / 100 * (len(ordered) - 1)
    lower = math.floor(position)
    upper = min(lower + 1, len(ordered) - 1)
    return ordered[lower] + (ordered[upper] - ordered[lower]) * (position - lower)


@pytest.mark.parametrize("seed", [0, 7, 12345])
def test_the_interval_equals_a_plain_loop_with_the_same_draws(seed: int) -> None:
    values = [0.0, 1.0, 1.0, 0.5, 0.0, 1.0, 0.25, 1.0, 0.0, 1.0, 1.0, 0.5]
    resamples = 400
    rng = np.random.default_rng(seed)
    means = []
    for _ in range(resamples):
        picks = [int(i) for i in rng.integers(0, len(values), size=len(values))]
        means.append(sum(values[i] for i in picks) / len(picks))
    estimate = bootstrap({"r": values}, seed=seed, resamples=resamples)["r"]
    assert estimate.mean == pytest.approx(sum(values) / len(values))
    assert estimate.low == pytest.approx(_plain_percentile(means, 2.5))
    assert estimate.high == pytest.approx(_plain_percentile(means, 97.5))
    assert estimate.low < estimate.mean < estimate.high


def test_same_seed_same_interval_other_seed_other_draws() -> None:
    values = [(i * 7 % 11) / 11 for i in range(40)]
    first = bootstrap({"r": values}, seed=1, resamples=101)["r"]
    assert bootstrap({"r": values}, seed=1, resamples=101)["r"] == first
    assert bootstrap({"r": values}, seed=2, resamples=101)["r"] != first


def test_recall_at_k_counts_evidence_in_the_first_k() -> None:
    assert recall_at(["a", "b"], ["x", "a", "y", "b"], [1, 2, 4]) == [0.0, 0.5, 1.0]


def _summary() -> list[dict[str, object]]:
    def rows(hits: int) -> list[QuestionScores]:
        recall = tuple(1.0 if k >= hits else 0.0 for k in range(1, 11))
        return [
            QuestionScores("c", "single", recall, (1.0,)),
            QuestionScores("c", "multi", (0.0,) * 10, (0.0,)),
        ]

    return summarise({"fast": rows(1), 'odd <name> & "q"': rows(4)}, budgets=[500])


def test_svg_parses_with_one_polyline_of_ten_points_per_configuration() -> None:
    root = ET.fromstring(recall_svg(_summary()))
    assert root.tag == f"{SVG}svg"
    series = root.findall(f"{SVG}polyline[@class='series']")
    assert [s.get("data-config") for s in series] == ["fast", 'odd <name> & "q"']
    points = [
        [tuple(map(float, p.split(","))) for p in s.get("points", "").split()] for s in series
    ]
    assert [len(p) for p in points] == [10, 10]
    # Recall 0.5 everywhere for "fast", 0 then 0.5 from k=4 for the other: the same
    # height from k=4 on, lower before.
    assert len({y for _, y in points[0]}) == 1
    assert points[1][0][1] > points[0][0][1] and points[1][3][1] == points[0][3][1]
    legend = [t.text for t in root.iter(f"{SVG}text")]
    assert "fast" in legend and 'odd <name> & "q"' in legend


def test_markdown_rows_per_configuration_and_category() -> None:
    table = markdown(_summary(), budgets=[500])
    assert "| fast | 2 | 0.500 [0.000, 1.000] |" in table
    assert "| fast | multi | 1 | 0.000 [0.000, 0.000] |" in table
    assert "ctx 500" in table


def test_configurations_file(tmp_path: Path) -> None:
    path = tmp_path / "models.json"
    path.write_text(json.dumps({"wide": {"embedder": "hashing"}, "small": {"dim": 64}}))
    assert load_configs(path) == [EvalConfig("wide"), EvalConfig("small", dim=64)]
    path.write_text("[1]")
    with pytest.raises(ConfigurationError, match="expected an object of name -> settings"):
        load_configs(path)
    with pytest.raises(ConfigurationError, match="configurations file"):
        load_configs(tmp_path / "none.json")


def test_config_specs() -> None:
    assert parse_config("hashing") == EvalConfig("hashing")
    assert parse_config("small=hashing,dim=64") == EvalConfig("small", dim=64)
    e5 = parse_config(
        "e5=openai,model=e5,base_url=http://h/v1,query_form=query,document_form=passage,"
        "reranker=http,reranker_model=r,reranker_base_url=http://r,candidates=30"
    )
    assert (e5.embedder, e5.query_form, e5.candidates, e5.reranker_model) == (
        "openai",
        "query",
        30,
        "r",
    )
    for bad, cause in [
        ("x=hashing,colour=red", "unknown key 'colour'"),
        ("x=hashing,dim=wide", "dim must be an integer"),
        ("x=hashing,candidates=0", "candidates must be positive"),
        ("x=hashing,oops", "'oops' is not key=value"),
    ]:
        with pytest.raises(ConfigurationError, match=cause):
            parse_config(bad)
    with pytest.raises(
        ConfigurationError,
        match=r"configuration 'x': embedder 'hashing' takes no query_input_type .*openai endpoint",
    ):
        parse_config("x=hashing,query_form=query").build_embedder()


def test_a_configuration_with_forms_builds_through_the_stores_spec() -> None:
    config = parse_config(
        "x=openai,model=e5,base_url=http://127.0.0.1:9/v1,dim=8,query_form=query,"
        "document_form=passage"
    )
    embedder = config.build_embedder()
    assert embedder.dim == 8
    assert "<input_type=query>" in embedder.identity
    with pytest.raises(ConfigurationError, match="configuration 'y': the openai embedder needs"):
        parse_config("y=openai,query_form=query").build_embedder()
