"""memstore as a LangGraph BaseStore, on SQLite and Postgres.

The behaviours are the ones LangGraph's own store tests check
(libs/checkpoint/tests/test_store.py, libs/checkpoint-postgres/tests/test_store.py,
libs/checkpoint-sqlite/tests/test_store.py), written anew against memstore,
plus tenancy, which LangGraph's stores do not have.
"""

from __future__ import annotations

import asyncio
import base64
import math
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import numpy as np
import pytest
from conftest import ManualClock, table_counts

from tests.store_parts import own_engine, store_with_parts

pytest.importorskip("langgraph.store.base")

from langgraph.graph import START, StateGraph
from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    PutOp,
    SearchOp,
)
from sqlalchemy import delete, update
from typing_extensions import TypedDict

from memstore import (
    DimensionMismatch,
    EmbedderMismatch,
    InvalidImportRow,
    InvalidInput,
    MemoryStore,
    MemstoreError,
    SyncMemoryStore,
    Unavailable,
)
from memstore.db.engine import create_engine
from memstore.embeddings import HashingEmbedder
from memstore.embeddings.base import embed_checked
from memstore.integrations.langgraph import MemstoreStore, WrongThread
from memstore.models import LangGraphItemRow
from memstore.search.reembed import ReembedResult, reembed
from memstore.search.settings import recorded_embedder

DIM = 384


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def mstore(db_url: str, clock: ManualClock) -> AsyncIterator[MemoryStore]:
    async with MemoryStore.open(db_url, clock=clock) as opened:
        yield opened


@pytest.fixture
def lg(mstore: MemoryStore) -> MemstoreStore:
    """Pinned to one tenant: namespaces are LangGraph's own, as in its stores."""
    return MemstoreStore(mstore, user_id="alice")


@pytest.fixture
def tenants(mstore: MemoryStore) -> MemstoreStore:
    """The default: the first namespace label is the tenant."""
    return MemstoreStore(mstore)


@pytest.fixture
def vec(mstore: MemoryStore) -> MemstoreStore:
    return MemstoreStore(mstore, user_id="alice", index={"dims": DIM, "fields": ["text"]})


# ---- basic operations (test_basic_store_ops / test_basic_store_operations) ----------


async def test_put_get_update_delete(lg: MemstoreStore, clock: ManualClock) -> None:
    ns = ("test", "documents")
    await lg.aput(ns, "doc1", {"title": "Doc", "n": 1, "nested": {"x": [1, 2.5, None]}})
    item = await lg.aget(ns, "doc1")
    assert isinstance(item, Item)
    assert item.namespace == ns and item.key == "doc1"
    assert item.value == {"title": "Doc", "n": 1, "nested": {"x": [1, 2.5, None]}}
    created = item.created_at
    assert created == item.updated_at == clock.now

    clock.advance(seconds=5)
    await lg.aput(ns, "doc1", {"title": "Doc v2"})
    updated = await lg.aget(ns, "doc1")
    assert updated is not None and updated.value == {"title": "Doc v2"}
    assert updated.created_at == created  # an update keeps the creation time
    assert updated.updated_at == clock.now

    await lg.adelete(ns, "doc1")
    assert await lg.aget(ns, "doc1") is None
    await lg.adelete(ns, "doc1")  # deleting a missing key is not an error
    assert await lg.aget(("test", "other"), "doc1") is None
    assert await lg.aget(("test",), "doc1") is None


async def test_batch_results_follow_op_order(lg: MemstoreStore) -> None:
    await lg.aput(("test", "foo"), "key1", {"data": "value1"})
    await lg.aput(("test", "bar"), "key2", {"data": "value2"})
    results = await lg.abatch(
        [
            GetOp(("test", "foo"), "key1"),
            PutOp(("test", "bar"), "key2", {"data": "value2b"}),
            SearchOp(("test",), filter={"data": "value1"}, limit=10, offset=0),
            ListNamespacesOp(match_conditions=None, max_depth=None, limit=10, offset=0),
            GetOp(("test",), "key3"),
            PutOp(("test",), "key3", {"data": "value3"}),
            GetOp(("test",), "key3"),  # sees the put before it in the same batch
            PutOp(("test",), "key3", None),  # value None deletes
            GetOp(("test",), "key3"),
        ]
    )
    assert isinstance(results[0], Item) and results[0].value == {"data": "value1"}
    assert results[1] is None
    assert isinstance(results[2], list) and [i.key for i in results[2]] == ["key1"]
    assert results[3] == [("test", "bar"), ("test", "foo")]
    assert results[4] is None
    assert results[5] is None
    assert isinstance(results[6], Item) and results[6].value == {"data": "value3"}
    assert results[7] is None and results[8] is None
    got = await lg.aget(("test", "bar"), "key2")
    assert got is not None and got.value == {"data": "value2b"}


# ---- search with filters (test_search / test_search_items) ----------------------------


async def _docs(lg: MemstoreStore, clock: ManualClock) -> None:
    for ns, key, value in [
        (
            ("test", "docs"),
            "doc1",
            {
                "title": "First",
                "author": "Alice",
                "score": 4.5,
                "tags": ["important"],
                "meta": {"lang": "en"},
            },
        ),
        (
            ("test", "docs"),
            "doc2",
            {
                "title": "Second",
                "author": "Bob",
                "score": 3,
                "tags": ["draft"],
                "meta": {"lang": "fr"},
            },
        ),
        (("test", "images"), "img1", {"title": "Image", "author": "Alice", "score": 5}),
        (("other",), "x", {"title": "Elsewhere", "author": "Alice", "score": 1}),
    ]:
        clock.advance(seconds=1)
        await lg.aput(ns, key, value)


async def test_search_filters_and_pagination(lg: MemstoreStore, clock: ManualClock) -> None:
    await _docs(lg, clock)

    async def keys(prefix: tuple[str, ...], **kw: Any) -> list[str]:
        return [i.key for i in await lg.asearch(prefix, **kw)]

    # Newest update first; only under the prefix.
    assert await keys(("test",)) == ["img1", "doc2", "doc1"]
    assert await keys(("test", "docs")) == ["doc2", "doc1"]
    assert await keys(()) == ["x", "img1", "doc2", "doc1"]  # pinned tenant: () is everything
    assert await keys(("test",), filter={"author": "Alice"}) == ["img1", "doc1"]
    assert await keys(("test",), filter={"author": "Alice", "title": "First"}) == ["doc1"]
    assert await keys(("test",), filter={"meta": {"lang": "fr"}}) == ["doc2"]
    assert await keys(("test",), filter={"tags": ["draft"]}) == ["doc2"]
    assert await keys(("test",), filter={"score": {"$gt": 4}}) == ["img1", "doc1"]
    assert await keys(("test",), filter={"score": {"$gte": 4.5}}) == ["img1", "doc1"]
    assert await keys(("test",), filter={"score": {"$lt": 4.5}}) == ["doc2"]
    assert await keys(("test",), filter={"score": {"$lte": 3}}) == ["doc2"]
    assert await keys(("test",), filter={"score": {"$gte": 3, "$lt": 5}}) == ["doc2", "doc1"]
    assert await keys(("test",), filter={"author": {"$eq": "Bob"}}) == ["doc2"]
    assert await keys(("test",), filter={"author": {"$ne": "Bob"}}) == ["img1", "doc1"]
    assert await keys(("test",), filter={"missing": {"$gt": 0}}) == []
    assert await keys(("test",), filter={"author": "Nobody"}) == []
    # Pagination over the filtered, ordered list.
    assert await keys(("test",), limit=2) == ["img1", "doc2"]
    assert await keys(("test",), limit=2, offset=2) == ["doc1"]
    assert await keys(("test",), limit=2, offset=3) == []
    # Without an index a query does not rank; items come back unscored.
    found = await lg.asearch(("test",), query="Second")
    assert [i.score for i in found] == [None, None, None]


async def test_filter_values_are_data_not_sql(lg: MemstoreStore) -> None:
    hostile = "'; DROP TABLE langgraph_items; --"
    await lg.aput(("s",), "k", {"name": hostile, "1-key": True})
    assert [i.key for i in await lg.asearch(("s",), filter={"name": hostile})] == ["k"]
    assert await lg.asearch(("s",), filter={"name": "' OR '1'='1"}) == []
    assert [i.key for i in await lg.asearch(("s",), filter={"1-key": True})] == ["k"]
    # A boolean is not the number 1 (JSON semantics), in both directions.
    assert await lg.asearch(("s",), filter={"1-key": 1}) == []


async def test_namespace_segment_boundaries_and_metacharacters(lg: MemstoreStore) -> None:
    for ns in [
        ("foo",),
        ("foo", "child"),
        ("foo", "child", "deep"),
        ("foobar",),
        ("foobar", "baz"),
        ("foo2",),
        ("user_1",),
        ("user_1", "c"),
        ("userX1",),
        ("a%b",),
        ("axxb",),
        ("users", "alice"),
        ("users", "alice\n"),
        ("Foo",),
    ]:
        await lg.aput(ns, "k", {"v": 1})

    async def spaces(prefix: tuple[str, ...]) -> set[tuple[str, ...]]:
        return {i.namespace for i in await lg.asearch(prefix, limit=100)}

    assert await spaces(("foo",)) == {("foo",), ("foo", "child"), ("foo", "child", "deep")}
    assert await spaces(("foobar",)) == {("foobar",), ("foobar", "baz")}
    assert await spaces(("fo",)) == set()
    assert await spaces(("user_1",)) == {("user_1",), ("user_1", "c")}
    assert await spaces(("a%b",)) == {("a%b",)}
    assert await spaces(("users", "alice")) == {("users", "alice")}
    assert await spaces(("Foo",)) == {("Foo",)}  # case-sensitive


# ---- list_namespaces (test_list_namespaces_*) -------------------------------------


async def test_list_namespaces(lg: MemstoreStore) -> None:
    for ns in [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
        ("users", "123"),
        ("users", "456", "s"),
        ("uid", "users", "alice"),
        ("uid", "users", "malice"),
        ("uid", "a", "b", "alice"),
    ]:
        await lg.aput(ns, "k", {"v": 1})

    assert await lg.alist_namespaces(prefix=("a", "b")) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
    ]
    assert await lg.alist_namespaces(suffix=("f",)) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert await lg.alist_namespaces(prefix=("a",), suffix=("f",)) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
    ]
    assert await lg.alist_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert await lg.alist_namespaces(prefix=("*", "*", "f")) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert await lg.alist_namespaces(suffix=("alice",)) == [
        ("uid", "a", "b", "alice"),
        ("uid", "users", "alice"),
    ]
    assert await lg.alist_namespaces(prefix=("a",), max_depth=2) == [("a", "b"), ("a", "c")]
    assert await lg.alist_namespaces(prefix=("users",), max_depth=2) == [
        ("users", "123"),
        ("users", "456"),
    ]
    everything = await lg.alist_namespaces(limit=100)
    assert len(everything) == 11 and everything == sorted(everything)
    assert await lg.alist_namespaces(limit=3, offset=2) == everything[2:5]
    assert await lg.alist_namespaces(prefix=("nope",)) == []


async def test_list_namespaces_of_an_empty_store(lg: MemstoreStore) -> None:
    assert await lg.alist_namespaces() == []


# ---- tenancy ----------------------------------------------------------------------


async def test_first_label_is_the_tenant(
    db_url: str, tenants: MemstoreStore, mstore: MemoryStore
) -> None:
    await tenants.aput(("alice", "memories"), "m1", {"text": "alice's"})
    await tenants.aput(("bob", "memories"), "m1", {"text": "bob's"})
    await tenants.aput(("alice",), "root", {"text": "at alice's root"})
    got = await tenants.aget(("alice", "memories"), "m1")
    assert got is not None and got.value == {"text": "alice's"}
    assert got.namespace == ("alice", "memories")
    assert {i.key for i in await tenants.asearch(("alice",))} == {"m1", "root"}
    assert [i.value for i in await tenants.asearch(("bob",))] == [{"text": "bob's"}]
    assert await tenants.alist_namespaces(prefix=("alice",)) == [("alice",), ("alice", "memories")]
    # Rows really are stored under each tenant's user_id, with the rest as namespace.
    counts = await table_counts(db_url, "alice")
    assert counts["langgraph_items"] == 2
    # The TTL sweep is per tenant: one statement per tenant, always filtered.
    with pytest.raises(InvalidInput, match="tenant"):
        await tenants.sweep_ttl()
    assert await tenants.sweep_ttl(user_id="alice") == 0
    # forget() removes one tenant's items, not the other's.
    await mstore.forget(user_id="alice")
    assert await tenants.asearch(("alice",)) == []
    assert len(await tenants.asearch(("bob",))) == 1


async def test_operations_naming_no_tenant_are_refused(tenants: MemstoreStore) -> None:
    with pytest.raises(InvalidInput, match="tenant"):
        await tenants.asearch(())
    with pytest.raises(InvalidInput, match="tenant"):
        await tenants.alist_namespaces()
    with pytest.raises(InvalidInput, match="tenant"):
        await tenants.alist_namespaces(prefix=("*", "memories"))
    with pytest.raises(InvalidInput, match="tenant"):
        await tenants.alist_namespaces(suffix=("memories",))
    with pytest.raises(InvalidInput, match="reserved"):
        await tenants.aput(("__reserved__", "x"), "k", {"v": 1})


# ---- bad input writes nothing -----------------------------------------------------


@pytest.mark.parametrize(
    "op",
    [
        PutOp(("ok",), "k", {"bad": float("nan")}),
        PutOp(("ok",), "k", {"bad": object()}),
        PutOp(("ok",), "k", ["not", "a", "dict"]),  # type: ignore[arg-type]
        PutOp(("ok",), "", {"v": 1}),
        PutOp(("ok",), "k", {"v": 1}, ttl=-1),
        PutOp(("ok",), "k", {"v": 1}, index="text"),  # type: ignore[arg-type]
        PutOp(("a.b",), "k", {"v": 1}),
        PutOp(("",), "k", {"v": 1}),
        PutOp((), "k", {"v": 1}),
        PutOp(("langgraph",), "k", {"v": 1}),
        PutOp(("x" * 1100,), "k", {"v": 1}),
        PutOp(("漢" * 1000,), "k", {"v": 1}),
        PutOp(("ok",), "漢" * 1000, {"v": 1}),
        PutOp(("ok",), "\ud800", {"v": 1}),
        PutOp(("\ud800",), "k", {"v": 1}),
        SearchOp(("ok",), filter={"n": {"$regex": "a"}}),
        SearchOp(("ok",), filter={"n": {"$gt": "five"}}),
        SearchOp(("ok",), limit=-1),
        SearchOp(("ok",), query="\ud800"),
        SearchOp(("ok",), query=5),  # type: ignore[arg-type]
        ListNamespacesOp(max_depth=0),
        GetOp(("ok",), 5),  # type: ignore[arg-type]
    ],
)
async def test_bad_input_is_refused_and_writes_nothing(
    db_url: str, vec: MemstoreStore, mstore: MemoryStore, op: Any
) -> None:
    # The bad op comes after a good put: validation precedes any write. With an
    # index, so bad text would also reach the embedder.
    with pytest.raises(InvalidInput):
        await vec.abatch([PutOp(("ok",), "first", {"text": "fine"}), op])
    assert (await table_counts(db_url))["langgraph_items"] == 0


async def test_index_config_carries_what_langgraphs_stores_carry(
    vec: MemstoreStore, mstore: MemoryStore
) -> None:
    """test_vector_store_initialization reads index_config["dims"] and ["embed"]."""
    config = vec.index_config
    assert config is not None
    assert config["dims"] == DIM
    assert config["embed"] is mstore.embedder  # what embeds items and queries
    assert config["fields"] == ["text"]
    assert dict(config["__tokenized_fields"]) == {"text": ["text"]}  # type: ignore[typeddict-item]
    # A config read from one store is accepted by another on the same store.
    again = MemstoreStore(mstore, user_id="alice", index=config)
    assert again.index_config == config
    assert MemstoreStore(mstore).index_config is None


async def test_index_config_is_checked(mstore: MemoryStore) -> None:
    with pytest.raises(DimensionMismatch):
        MemstoreStore(mstore, index={"dims": 1536, "fields": ["text"]})
    with pytest.raises(InvalidInput, match="embed"):
        MemstoreStore(mstore, index={"dims": DIM, "embed": "openai:text-embedding-3-small"})
    with pytest.raises(InvalidInput):
        MemstoreStore(mstore, ttl={"default_ttl": -5})
    with pytest.raises(InvalidInput, match="expired"):
        MemstoreStore(mstore, ttl={"omit_expired": False})
    with pytest.raises(InvalidInput, match="sweep_ttl"):
        MemstoreStore(mstore, ttl={"sweep_interval_minutes": 5})
    with pytest.raises(InvalidInput, match="unknown"):
        MemstoreStore(mstore, ttl={"default_tll": 5})  # type: ignore[typeddict-unknown-key]
    assert MemstoreStore(mstore, ttl={"omit_expired": True}).ttl_config == {"omit_expired": True}


# ---- TTL (test_store_ttl, omit_expired_*) ---------------------------------------------


async def test_ttl_expiry_and_refresh_on_read(
    db_url: str, lg: MemstoreStore, clock: ManualClock, mstore: MemoryStore
) -> None:
    ns = ("ttl",)
    await lg.aput(ns, "item1", {"foo": "bar"}, ttl=1)  # minutes
    await lg.aput(ns, "forever", {"foo": "baz"})
    clock.advance(seconds=50)
    assert await lg.aget(ns, "item1") is not None  # refreshes: expires 50 s + 60 s
    clock.advance(seconds=50)
    assert [i.key for i in await lg.asearch(ns, filter={"foo": "bar"})] == ["item1"]
    clock.advance(seconds=50)
    assert await lg.aget(ns, "item1", refresh_ttl=False) is not None  # no refresh
    clock.advance(seconds=15)
    assert await lg.aget(ns, "item1") is None  # expired: 165 s > 100 s + 60 s
    assert [i.key for i in await lg.asearch(ns)] == ["forever"]
    assert await lg.alist_namespaces(prefix=("ttl",)) == [("ttl",)]
    # A read of an expired item does not resurrect it.
    assert await lg.aget(ns, "item1", refresh_ttl=True) is None
    # Expired rows are invisible before the sweep and gone after it.
    assert (await table_counts(db_url))["langgraph_items"] == 2
    assert await lg.sweep_ttl() == 1
    with pytest.raises(InvalidInput, match="pinned"):
        await lg.sweep_ttl(user_id="bob")
    assert (await table_counts(db_url))["langgraph_items"] == 1
    # Putting a key again after expiry starts afresh (new created_at).
    await lg.aput(ns, "item1", {"foo": "again"}, ttl=1)
    again = await lg.aget(ns, "item1")
    assert again is not None and again.created_at == clock.now


async def test_ttl_config_default_and_no_refresh(mstore: MemoryStore, clock: ManualClock) -> None:
    lg = MemstoreStore(mstore, user_id="alice", ttl={"default_ttl": 2, "refresh_on_read": False})
    await lg.aput(("d",), "k", {"v": 1})  # default TTL: 2 minutes
    await lg.aput(("d",), "keep", {"v": 2}, ttl=None)  # explicit None: never expires
    clock.advance(seconds=100)
    assert await lg.aget(("d",), "k") is not None  # no refresh (config)
    clock.advance(seconds=30)
    assert await lg.aget(("d",), "k") is None
    assert await lg.aget(("d",), "keep") is not None


async def test_expired_items_do_not_fill_a_page(lg: MemstoreStore, clock: ManualClock) -> None:
    for key in ("c", "b", "expired", "a"):
        clock.advance(seconds=1)
        await lg.aput(("page",), key, {"k": key}, ttl=1 if key == "expired" else None)
    clock.advance(seconds=61)
    assert [i.key for i in await lg.asearch(("page",), limit=2)] == ["a", "b"]
    assert [i.key for i in await lg.asearch(("page",), limit=2, offset=2)] == ["c"]


# ---- semantic search (test_vector_*, test_embed_with_path, test_scores) -------------


async def test_vector_search_ranks_by_meaning_and_scores_are_cosine(
    vec: MemstoreStore, mstore: MemoryStore
) -> None:
    ns = ("memories",)
    await vec.aput(ns, "tea", {"text": "I like green tea in the morning"})
    await vec.aput(ns, "bike", {"text": "my bicycle has a flat tyre"})
    await vec.aput(ns, "paris", {"text": "we moved to Paris last spring"})
    found = await vec.asearch(ns, query="green tea")
    assert found[0].key == "tea"
    assert all(i.score is not None for i in found)
    scores = [i.score for i in found]
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    q, d = await embed_checked(mstore.embedder, ["green tea", "I like green tea in the morning"])
    assert found[0].score == pytest.approx(float(q @ d), abs=1e-5)
    # Filters and pagination apply with a query too.
    page = await vec.asearch(ns, query="green tea", limit=1, offset=1)
    assert [i.key for i in page] == [found[1].key]
    assert [
        i.key
        for i in await vec.asearch(
            ns, query="tea", filter={"text": {"$ne": "I like green tea in the morning"}}
        )
    ] == [k.key for k in found[1:]]


async def test_an_empty_query_ranks_nothing(vec: MemstoreStore) -> None:
    """test_vector_search_edge_cases: query="" is no query (score None), as query=None."""
    await vec.aput(("docs",), "d", {"text": "test document"})
    for query in ("", None):
        found = await vec.asearch(("docs",), query=query)
        assert [(i.key, i.score) for i in found] == [("d", None)]


async def test_vector_update_reembeds(vec: MemstoreStore, mstore: MemoryStore) -> None:
    ns = ("memories",)
    await vec.aput(ns, "doc", {"text": "bicycle repair shop"})
    await vec.aput(ns, "other", {"text": "a poem about the sea"})
    assert (await vec.asearch(ns, query="bicycle repair"))[0].key == "doc"
    await vec.aput(ns, "doc", {"text": "ocean waves and the sea shore"})
    # The score is against the new text, not the old vector.
    q, new = await embed_checked(
        mstore.embedder, ["bicycle repair", "ocean waves and the sea shore"]
    )
    scores = {i.key: i.score for i in await vec.asearch(ns, query="bicycle repair")}
    assert scores["doc"] == pytest.approx(float(q @ new), abs=1e-5)
    assert (await vec.asearch(ns, query="sea shore waves"))[0].key == "doc"


async def test_index_fields_per_put_and_not_indexed(vec: MemstoreStore) -> None:
    ns = ("docs",)
    await vec.aput(
        ns, "by_title", {"title": "quantum physics", "text": "cooking pasta"}, index=["title"]
    )
    await vec.aput(ns, "by_text", {"title": "cooking pasta", "text": "quantum physics"})
    await vec.aput(
        ns,
        "nested",
        {"text": "x", "sections": [{"body": "quantum physics"}]},
        index=["sections[*].body"],
    )
    await vec.aput(ns, "unindexed", {"text": "quantum physics"}, index=False)
    found = await vec.asearch(ns, query="quantum physics", limit=10)
    by_key = {i.key: i.score for i in found}
    assert by_key["by_title"] == pytest.approx(1.0, abs=1e-5)
    assert by_key["by_text"] == pytest.approx(1.0, abs=1e-5)
    assert by_key["nested"] == pytest.approx(1.0, abs=1e-5)
    assert by_key["unindexed"] is None  # returned after the scored ones, unscored
    assert found[-1].key == "unindexed"


async def test_small_namespace_gets_k_results_in_a_big_tenant(vec: MemstoreStore) -> None:
    """Exact per-tenant search: no approximate index post-filter starves a small prefix."""
    for n in range(300):
        await vec.aput(("bulk",), f"b{n}", {"text": f"green tea note number {n}"})
    for n in range(5):
        await vec.aput(("small",), f"s{n}", {"text": f"unrelated words {n}"})
    found = await vec.asearch(("small",), query="green tea", limit=5)
    assert sorted(i.key for i in found) == [f"s{n}" for n in range(5)]


async def test_non_ascii(vec: MemstoreStore) -> None:
    ns = ("user_123", "memories")
    texts = ["这是中文", "これは日本語です", "이건 한국어야", "Это русский", "यह रूसी है"]
    for n, text in enumerate(texts, 1):
        await vec.aput(ns, str(n), {"text": text})
    for n, text in enumerate(texts, 1):
        assert (await vec.asearch(ns, query=text))[0].key == str(n)


# ---- inside a compiled LangGraph graph ---------------------------------------------


class State(TypedDict):
    user: str
    said: str
    recalled: list[str]


async def remember_and_recall(state: State, *, store: BaseStore) -> dict[str, Any]:
    ns = (state["user"], "memories")
    count = len(await store.asearch(ns, limit=1000))
    await store.aput(ns, f"m{count}", {"text": state["said"]})
    found = await store.asearch(ns, query=state["said"], limit=3)
    return {"recalled": [i.value["text"] for i in found]}


async def test_store_injected_into_a_compiled_graph(mstore: MemoryStore) -> None:
    lg = MemstoreStore(mstore, index={"dims": DIM, "fields": ["text"]})
    builder = StateGraph(State)
    builder.add_node("remember", remember_and_recall)
    builder.add_edge(START, "remember")
    graph = builder.compile(store=lg)

    await graph.ainvoke({"user": "alice", "said": "I love green tea", "recalled": []})
    await graph.ainvoke({"user": "bob", "said": "I love black coffee", "recalled": []})
    out = await graph.ainvoke({"user": "alice", "said": "green tea again", "recalled": []})
    # alice's memories only (bob's coffee is another tenant), best match first.
    assert out["recalled"] == ["green tea again", "I love green tea"]
    assert await lg.alist_namespaces(prefix=("bob",)) == [("bob", "memories")]


# ---- the synchronous API ----------------------------------------------------------


async def test_sync_api_from_another_thread(lg: MemstoreStore) -> None:
    await lg.aput(("s",), "k", {"v": 1})  # binds the store to this loop
    results: list[Any] = []

    def worker() -> None:
        lg.put(("s",), "k2", {"v": 2})
        results.append(lg.get(("s",), "k2"))
        results.append([i.key for i in lg.search(("s",))])

    # The worker blocks on this loop, so the loop must keep running while it waits.
    await asyncio.to_thread(worker)
    assert isinstance(results[0], Item) and results[0].value == {"v": 2}
    assert sorted(results[1]) == ["k", "k2"]


async def test_sync_api_on_the_loop_is_refused(lg: MemstoreStore) -> None:
    await lg.aput(("s",), "k", {"v": 1})
    with pytest.raises(MemstoreError, match="async"):
        lg.get(("s",), "k")


async def test_sync_api_works_from_the_first_call(lg: MemstoreStore) -> None:
    """No async call has bound anything: the store's loop is the one it was opened on."""
    results: list[Any] = []

    def worker() -> None:
        lg.put(("s",), "k", {"v": 1})
        results.append(lg.get(("s",), "k"))
        results.append([i.key for i in lg.search(("s",))])
        results.append(lg.list_namespaces(prefix=("s",)))
        lg.delete(("s",), "k")
        results.append(lg.batch([GetOp(("s",), "k")]))

    await asyncio.to_thread(worker)
    assert isinstance(results[0], Item) and results[0].value == {"v": 1}
    assert results[1:] == [["k"], [("s",)], [None]]


def test_sync_api_over_a_sync_memory_store(db_url: str) -> None:
    """Plain synchronous code: the store's loop runs in SyncMemoryStore's thread."""
    with SyncMemoryStore.open(db_url) as sync:
        lg = MemstoreStore(sync.async_store, user_id="alice")
        lg.put(("s",), "k", {"v": 1})
        item = lg.get(("s",), "k")
        assert item is not None and item.value == {"v": 1}
        assert [i.key for i in lg.search(("s",))] == ["k"]


async def test_sync_api_on_the_loop_is_asyncios_invalid_state(lg: MemstoreStore) -> None:
    """LangGraph's own async stores raise asyncio.InvalidStateError there; so does memstore."""
    calls = [
        lambda: lg.put(("foo",), "k", {"v": 1}),
        lambda: lg.get(("foo",), "k"),
        lambda: lg.delete(("foo",), "k"),
        lambda: lg.search(("foo",)),
        lambda: lg.list_namespaces(prefix=("foo",)),
        lambda: lg.batch([PutOp(("foo",), "k", {"v": 1})]),
    ]
    for call in calls:
        with pytest.raises(asyncio.InvalidStateError) as refused:
            call()
        assert isinstance(refused.value, WrongThread)
    assert await lg.asearch(("foo",)) == []


async def test_a_burst_beyond_the_pool_waits_for_a_connection(db_url: str) -> None:
    """test_large_batches_async: more concurrent calls than pooled connections queue.

    One connection, a 10 ms checkout timeout, and that connection held by a
    transaction for longer: calls that waited in the pool's checkout would fail
    (Unavailable); they must wait their turn instead.
    """
    options = {"pool_size": 1, "max_overflow": 0, "pool_timeout": 0.01}
    async with store_with_parts(db_url, engine_options=options) as parts:
        lg = MemstoreStore(parts.store, user_id="alice")
        held, release = asyncio.Event(), asyncio.Event()

        async def hold() -> None:
            async with parts.db.write("alice"):
                held.set()
                await release.wait()

        holder = asyncio.create_task(hold())
        await held.wait()
        burst = [asyncio.create_task(lg.aput(("b",), f"k{n}", {"n": n})) for n in range(20)]
        await asyncio.sleep(0.1)  # longer than the checkout timeout
        release.set()
        await holder
        await asyncio.gather(*burst)
        assert len(await lg.asearch(("b",), limit=100)) == 20


async def test_a_burst_queues_while_the_event_loop_is_held_up(db_url: str) -> None:
    """test_large_batches_async: 60,000 calls at once keep the event loop busy for seconds.

    Here a blocking step holds the loop for several times the connect timeout
    (Postgres) and the busy timeout (SQLite) while a burst of writes and reads
    is opening connections and taking the write lock. A handshake whose replies
    waited for the loop is not a database that is down, and a writer whose
    commit waited for the loop must not make the writers queued behind it fail
    with "database is locked": every call completes.
    """
    options = {"connect_timeout": 1.0, "sqlite_busy_timeout_ms": 300}
    async with store_with_parts(db_url, engine_options=options) as parts:
        await parts.engine.dispose()  # the burst opens every connection it uses
        lg = MemstoreStore(parts.store, user_id="alice")

        async def hold_up_the_loop() -> None:
            await asyncio.sleep(0)  # the burst's first steps run first
            time.sleep(3.0)  # noqa: ASYNC251 -- blocking on purpose: the loop takes no turns

        burst: list[Any] = []
        for n in range(60):
            ns = ("burst", str(n % 2))
            burst += [
                lg.aput(ns, f"k{n}", {"n": n}),
                lg.aget(ns, f"k{n}"),
                lg.asearch(("burst",)),
                lg.aput(ns, f"k{n}", {"n": n + 1}),
                lg.adelete(ns, f"never-put-{n}"),
            ]
        results = await asyncio.gather(*burst, hold_up_the_loop(), return_exceptions=True)
        assert [r for r in results if isinstance(r, BaseException)] == []
        assert len(await lg.asearch(("burst",), limit=100)) == 60


async def test_a_pool_held_elsewhere_is_busy_not_unreachable(db_url: str) -> None:
    options = {"pool_size": 1, "max_overflow": 0, "pool_timeout": 0.01}
    async with store_with_parts(db_url, engine_options=options) as parts:
        lg = MemstoreStore(parts.store, user_id="alice")
        async with parts.engine.connect():  # not memstore's: holds the only connection
            with pytest.raises(Unavailable, match="busy") as refused:
                await lg.aget(("b",), "k")
        assert "unreachable" not in str(refused.value)
        assert await lg.aget(("b",), "k") is None


async def test_concurrent_puts_and_searches(vec: MemstoreStore) -> None:
    """test_async_batched_vector_search_concurrent: many coroutines at once, one store."""
    ns = ("docs",)
    await asyncio.gather(
        *(vec.aput(ns, f"d{n}", {"text": f"note {n} about tea"}) for n in range(30))
    )
    results = await asyncio.gather(
        *(vec.asearch(ns, query=f"note {n} about tea", limit=3) for n in range(30))
    )
    for n, found in enumerate(results):
        assert found[0].key == f"d{n}"
    assert len(await vec.asearch(ns, limit=100)) == 30


# ---- numbers beyond float range ------------------------------------------------------


async def test_range_filters_compare_numbers_exactly_beyond_float_range(
    lg: MemstoreStore,
) -> None:
    ns = ("big",)
    for key, n in [
        ("huge", 10**400),
        ("huger", 10**400 + 1),
        ("tiny", -(10**400)),
        ("one", 1),
        ("half", 0.5),
        ("word", "many"),
    ]:
        await lg.aput(ns, key, {"n": n})

    async def keys(**condition: Any) -> list[str]:
        return sorted(i.key for i in await lg.asearch(ns, filter={"n": condition}, limit=20))

    assert await keys(**{"$gt": 1e308}) == ["huge", "huger"]
    # Exact, not as floats (10**400 and 10**400 + 1 would both be inf, or overflow).
    assert await keys(**{"$gt": 10**400}) == ["huger"]
    assert await keys(**{"$gte": 10**400}) == ["huge", "huger"]
    assert await keys(**{"$lt": 10**400}) == ["half", "one", "tiny"]
    assert await keys(**{"$lte": 0.5}) == ["half", "tiny"]
    assert await keys(**{"$gt": -(10**401), "$lt": -1}) == ["tiny"]
    assert await keys(**{"$eq": 10**400}) == ["huge"]
    assert len(await lg.asearch(ns, limit=20)) == 6
    with pytest.raises(InvalidInput, match="needs a number"):
        await keys(**{"$gt": math.nan})


async def test_numbers_beyond_float_range_survive_an_import(
    lg: MemstoreStore, mstore: MemoryStore
) -> None:
    await lg.aput(("big",), "huge", {"n": 10**400, "text": "x"})
    await lg.aput(("big",), "one", {"n": 1})
    await mstore.import_(await mstore.export(user_id="alice"), user_id="bob")
    bob = MemstoreStore(mstore, user_id="bob")
    found = await bob.asearch(("big",), filter={"n": {"$gt": 1e308}})
    assert [(i.key, i.value["n"]) for i in found] == [("huge", 10**400)]


# ---- embedder identity ----------------------------------------------------------------


class ReversedEmbedder:
    """Same width as the default, another vector space (hashes reversed text)."""

    identity = "test-reversed-embedder/384"
    dim = DIM

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return HashingEmbedder(DIM).embed_sync([t[::-1] for t in texts])


def _indexed(store: MemoryStore) -> MemstoreStore:
    return MemstoreStore(
        store, user_id="alice", index={"dims": store.embedder.dim, "fields": ["text"]}
    )


async def test_langgraph_vectors_record_the_embedder(db_url: str) -> None:
    async with MemoryStore.open(db_url) as store, own_engine(db_url) as engine:
        await _indexed(store).aput(("docs",), "plain", {"text": "no vector"}, index=False)
        assert await recorded_embedder(engine) is None  # nothing embedded yet
        await _indexed(store).aput(("docs",), "a", {"text": "cats purr on the sofa"})
        assert await recorded_embedder(engine) == HashingEmbedder().identity
    with pytest.raises(EmbedderMismatch):
        async with MemoryStore.open(db_url, embedder=ReversedEmbedder()):
            pass


async def test_two_stores_racing_to_claim_with_langgraph_writes(db_url: str) -> None:
    async with (
        MemoryStore.open(db_url) as first,
        MemoryStore.open(db_url, embedder=ReversedEmbedder()) as second,
    ):
        await _indexed(first).aput(("docs",), "a", {"text": "cats purr"})
        with pytest.raises(EmbedderMismatch):
            await _indexed(second).aput(("docs",), "b", {"text": "dogs bark"})
        # An unindexed put writes no vector: nothing to mix up.
        await _indexed(second).aput(("docs",), "c", {"text": "fish swim"}, index=False)
        assert sorted(i.key for i in await _indexed(first).asearch(("docs",))) == ["a", "c"]


# ---- reembed covers LangGraph items ---------------------------------------------------

_DOCS = {
    "cats": {"text": "cats purr on the sofa", "title": "pets"},
    "dogs": {"text": "dogs bark at the postman", "title": "pets"},
    "tea": {"title": "green tea in the morning", "text": "a drink"},
    "nested": {"text": "x", "sections": [{"body": "quantum physics"}, {"body": "cats"}]},
    "plain": {"text": "cats everywhere"},
}
# What each item is indexed on (None: not indexed).
_FIELDS: dict[str, list[str] | None] = {
    "cats": None,
    "dogs": None,
    "tea": ["title"],
    "nested": ["sections[*].body"],
    "plain": [],
}


async def _put_docs(db_url: str) -> None:
    async with MemoryStore.open(db_url) as store:
        lg = _indexed(store)
        for key, value in _DOCS.items():
            fields = _FIELDS[key]
            index: Any = False if fields == [] else fields
            await lg.aput(("docs",), key, value, index=index)


@pytest.fixture
def width_restored(db_url: str) -> Iterator[str]:
    """``db_url``, put back to the default width after a test that re-embeds it."""
    yield db_url

    async def restore() -> None:
        # The session-shared database must go back to the default width; items whose
        # fields the test erased could not be re-embedded, so they go first.
        engine = create_engine(db_url)
        try:
            async with engine.begin() as conn:
                await conn.execute(delete(LangGraphItemRow))
            await reembed(engine, HashingEmbedder())
        finally:
            await engine.dispose()

    asyncio.run(restore())


async def _reembed(db_url: str, embedder: Any, **options: bool) -> ReembedResult:
    engine = create_engine(db_url)
    try:
        return await reembed(engine, embedder, **options)
    finally:
        await engine.dispose()


async def _expected_scores(embedder: Any, query: str) -> dict[str, float | None]:
    expected: dict[str, float | None] = {}
    (q,) = await embed_checked(embedder, [query])
    for key, value in _DOCS.items():
        fields = _FIELDS[key]
        if fields == []:
            expected[key] = None
            continue
        if fields is None:
            texts = [str(value["text"])]
        elif fields == ["title"]:
            texts = [str(value["title"])]
        else:
            texts = [s["body"] for s in value["sections"]]  # type: ignore[attr-defined]
        expected[key] = float((await embed_checked(embedder, texts) @ q).max())
    return expected


@pytest.mark.parametrize(
    "new",
    [
        pytest.param(HashingEmbedder(48), id="other-width"),
        pytest.param(ReversedEmbedder(), id="same-width-other-space"),
    ],
)
@pytest.mark.usefixtures("width_restored")
async def test_reembed_recomputes_langgraph_vectors(db_url: str, new: Any) -> None:
    await _put_docs(db_url)
    result = await _reembed(db_url, new)
    async with MemoryStore.open(db_url, embedder=new) as store:
        found = await _indexed(store).asearch(("docs",), query="cats purr", limit=10)
    scores = {i.key: i.score for i in found}
    expected = await _expected_scores(new, "cats purr")
    assert scores.keys() == expected.keys()
    for key, score in expected.items():
        if score is None:
            assert scores[key] is None, key
        else:
            assert scores[key] == pytest.approx(score, abs=1e-5), key
    assert result.langgraph_items == 4  # every item that holds a vector


async def test_reembed_counts_langgraph_items_only_when_it_recomputes_them(db_url: str) -> None:
    await _put_docs(db_url)
    assert (await _reembed(db_url, HashingEmbedder())).langgraph_items == 0  # all have vectors
    assert (await _reembed(db_url, HashingEmbedder(), all_rows=True)).langgraph_items == 4


async def test_reembed_refuses_items_whose_indexed_fields_are_unknown(db_url: str) -> None:
    """Items written before their fields were recorded cannot be re-embedded: refuse,
    writing nothing, rather than leave vectors of the old space behind."""
    await _put_docs(db_url)
    engine = create_engine(db_url)
    try:
        async with engine.begin() as conn:
            await conn.execute(
                update(LangGraphItemRow)
                .where(LangGraphItemRow.user_id == "alice", LangGraphItemRow.key == "cats")
                .values(index_fields=None)
            )
    finally:
        await engine.dispose()
    with pytest.raises(InvalidInput, match="1 LangGraph item"):
        await _reembed(db_url, HashingEmbedder(48))
    async with MemoryStore.open(db_url) as store:  # still the old width and embedder
        found = await _indexed(store).asearch(("docs",), query="cats purr", limit=10)
    assert found[0].score is not None and found[0].key in {"cats", "nested"}


@pytest.mark.usefixtures("width_restored")
def test_reembed_cli_reports_langgraph_items_and_refuses_in_one_line(db_url: str) -> None:
    import os
    import subprocess
    import sys
    from pathlib import Path

    asyncio.run(_put_docs(db_url))
    root = Path(__file__).resolve().parents[1]

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "memstore", "reembed", "--url", db_url, *args],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=root,
            env={**os.environ, "PYTHONPATH": str(root)},
        )

    done = cli("--dim", "48")
    assert done.returncode == 0, done.stderr
    assert "re-embedded 0 episodes, 0 facts and 4 LangGraph store items" in done.stdout

    async def forget_fields() -> None:
        engine = create_engine(db_url)
        try:
            async with engine.begin() as conn:
                await conn.execute(
                    update(LangGraphItemRow)
                    .where(LangGraphItemRow.user_id == "alice")
                    .values(index_fields=None)
                )
        finally:
            await engine.dispose()

    asyncio.run(forget_fields())
    refused = cli("--dim", "384")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "4 LangGraph item(s)" in refused.stderr


# ---- imports give LangGraph items this store's vectors --------------------------------


async def _docs_dump(db_url: str) -> dict[str, Any]:
    await _put_docs(db_url)
    async with MemoryStore.open(db_url) as store:
        dump = await store.export(user_id="alice")
        await store.forget(user_id="alice")
    return dump


async def _imported_scores(db_url: str, dump: dict[str, Any]) -> dict[str, float | None]:
    async with MemoryStore.open(db_url) as store:
        await store.import_(dump, user_id="alice")
        found = await _indexed(store).asearch(("docs",), query="cats purr", limit=10)
    return {i.key: i.score for i in found}


def _assert_scores(got: dict[str, float | None], expected: dict[str, float | None]) -> None:
    assert got.keys() == expected.keys()
    for key, score in expected.items():
        assert (got[key] is None) if score is None else got[key] == pytest.approx(score, abs=1e-5)


async def test_import_from_another_embedder_recomputes_item_vectors(db_url: str) -> None:
    dump = await _docs_dump(db_url)
    # As if another embedder had made the dump: its vectors are in another space.
    dump["embedder"] = ReversedEmbedder.identity
    for row in dump["tables"]["langgraph_items"]:
        if row["vectors"] is not None:
            count = len(base64.b64decode(row["vectors"])) // (4 * DIM)
            other = await embed_checked(ReversedEmbedder(), ["x"] * count)
            row["vectors"] = base64.b64encode(other.astype("<f4").tobytes()).decode()
    got = await _imported_scores(db_url, dump)
    _assert_scores(got, await _expected_scores(HashingEmbedder(), "cats purr"))


async def test_import_computes_missing_item_vectors_from_their_fields(db_url: str) -> None:
    dump = await _docs_dump(db_url)
    for row in dump["tables"]["langgraph_items"]:
        row["vectors"] = None
    got = await _imported_scores(db_url, dump)
    _assert_scores(got, await _expected_scores(HashingEmbedder(), "cats purr"))


async def test_import_from_another_embedder_refuses_items_without_fields(db_url: str) -> None:
    dump = await _docs_dump(db_url)
    dump["embedder"] = ReversedEmbedder.identity
    rows = dump["tables"]["langgraph_items"]
    index = next(i for i, r in enumerate(rows) if r["key"] == "cats")
    rows[index].pop("index_fields")  # a dump from before migration 0012
    async with MemoryStore.open(db_url) as store:
        with pytest.raises(InvalidImportRow) as caught:
            await store.import_(dump, user_id="alice")
        assert (caught.value.table, caught.value.row, caught.value.column) == (
            "langgraph_items",
            index,
            "vectors",
        )
        assert set((await table_counts(db_url, "alice")).values()) == {0}
