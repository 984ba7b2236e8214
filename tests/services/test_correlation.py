"""Test vectors for correlation ids, store hints, user ids, scope hashes and store keys
(docs/decisions.md, "Correlation-keyed waits").

Expected hashes are computed here with hashlib, never with the functions under test.
"""

import hashlib

import pytest

from suspensions import correlation
from suspensions.correlation import Correlation

CANONICAL = "acme:slack:C1:conv-9:U7"
NONCE = "0123456789abcdef0123456789abcdef"
OTHER_NONCE = "fedcba9876543210fedcba9876543210"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def key(store_hint: str, conversation: str, thread: str = "", reply: str = "") -> str:
    scope_hash = sha(conversation + "\n" + thread + "\n" + reply + "\n")
    return f"{store_hint}::{scope_hash}"


def test_the_canonical_hint_joins_the_five_parts_with_colons():
    hint = correlation.canonical_hint(tenant="acme", provider="slack", channel="C1", conversation="conv-9", user="U7")
    assert hint == CANONICAL


def test_the_store_hint_without_a_session_hint_is_the_canonical_hint_with_its_pack():
    hint = correlation.bare_hint(canonical=CANONICAL, session_hint=None)
    assert correlation.store_hint(hint=hint, pack="support") == "acme:slack:C1:conv-9:U7::pack=support"


def test_the_store_hint_with_a_session_hint_is_the_session_hint_with_its_pack():
    hint = correlation.bare_hint(canonical=CANONICAL, session_hint="my-session")
    assert correlation.store_hint(hint=hint, pack="support") == "my-session::pack=support"


def test_an_empty_session_hint_falls_back_to_the_canonical_hint():
    assert correlation.bare_hint(canonical=CANONICAL, session_hint="") == CANONICAL


def test_the_store_hint_without_a_pack_is_the_bare_hint():
    assert correlation.store_hint(hint=CANONICAL, pack=None) == CANONICAL


def test_the_user_id_is_sess_and_the_first_eight_bytes_of_the_store_hint_digest():
    store_hint = "acme:slack:C1:conv-9:U7::pack=support"
    expected = "sess" + hashlib.sha256(store_hint.encode()).digest()[:8].hex()
    assert correlation.user_id(store_hint) == expected == "sess9734c5aae6f50ead"


def test_the_user_id_of_a_session_hint_store_hint():
    expected = "sess" + hashlib.sha256(b"my-session::pack=support").digest()[:8].hex()
    assert correlation.user_id("my-session::pack=support") == expected


def test_the_scope_hash_without_thread_or_reply_covers_empty_parts():
    expected = sha("conv-9\n\n\n")
    assert correlation.scope_hash(conversation="conv-9", thread=None, reply_to=None) == expected
    assert expected == "dac544b12035870f80272737ebf500e19938cdbfd33f5292d15a78134bb6b9fa"


def test_the_scope_hash_of_a_thread_without_a_reply():
    assert correlation.scope_hash(conversation="conv-9", thread="t1", reply_to=None) == sha("conv-9\nt1\n\n")


def test_the_scope_hash_of_a_reply_without_a_thread():
    assert correlation.scope_hash(conversation="conv-9", thread=None, reply_to="r1") == sha("conv-9\n\nr1\n")


def test_the_store_key_is_the_store_hint_and_the_scope_hash():
    assert correlation.store_key(store_hint="h::pack=p", scope_hash="ab") == "h::pack=p::ab"


def test_the_conversation_is_the_fourth_segment_of_a_canonical_hint():
    assert correlation.conversation_of(CANONICAL) == "conv-9"
    assert correlation.conversation_of("my-session") == ""


def test_a_full_correlation_id_parses_into_its_parts_and_key():
    parsed = correlation.parse(f"{CANONICAL}::pack=support::flow=refund::thread=t1::reply=r1::n={NONCE}")
    assert parsed == Correlation(CANONICAL, "support", "refund", "t1", "r1", NONCE)
    assert parsed.resumable
    assert parsed.store_key == key(f"{CANONICAL}::pack=support", "conv-9", "t1", "r1")
    assert parsed.user_id == "sess" + hashlib.sha256(f"{CANONICAL}::pack=support".encode()).digest()[:8].hex()


def test_a_thread_without_a_reply_parses_and_keys_with_an_empty_reply():
    parsed = correlation.parse(f"{CANONICAL}::pack=p::flow=f::thread=t1")
    assert (parsed.thread, parsed.reply, parsed.flow) == ("t1", None, "f")
    assert parsed.store_key == key(f"{CANONICAL}::pack=p", "conv-9", thread="t1")


def test_a_reply_without_a_thread_parses_and_keys_with_an_empty_thread():
    parsed = correlation.parse(f"{CANONICAL}::pack=p::flow=f::reply=r1")
    assert (parsed.thread, parsed.reply, parsed.flow) == (None, "r1", "f")
    assert parsed.store_key == key(f"{CANONICAL}::pack=p", "conv-9", reply="r1")


def test_a_pack_with_an_empty_value_is_left_in_the_hint():
    parsed = correlation.parse("h:p:c:conv:u::pack=::flow=f")
    assert parsed == Correlation("h:p:c:conv:u::pack=", None, "f")
    assert parsed.store_hint == "h:p:c:conv:u::pack="
    assert not parsed.resumable


def test_a_marker_with_an_empty_value_is_not_stripped():
    parsed = correlation.parse(f"{CANONICAL}::pack=p::flow=f::thread=")
    assert (parsed.thread, parsed.flow) == (None, "f::thread=")


@pytest.mark.parametrize("nonce", [NONCE.upper(), NONCE[:31], NONCE + "0", "g" * 32])
def test_a_nonce_that_is_not_32_lowercase_hex_is_not_a_nonce(nonce):
    parsed = correlation.parse(f"{CANONICAL}::pack=p::flow=f::n={nonce}")
    assert parsed.nonce is None
    assert parsed.flow == f"f::n={nonce}"
    assert not correlation.is_nonce(nonce)


def test_the_nonce_never_changes_the_key():
    bare = correlation.parse(f"{CANONICAL}::pack=p::flow=f::thread=t1")
    with_nonce = correlation.parse(f"{CANONICAL}::pack=p::flow=f::thread=t1::n={NONCE}")
    assert (bare.nonce, with_nonce.nonce) == (None, NONCE)
    assert bare.store_key == with_nonce.store_key == key(f"{CANONICAL}::pack=p", "conv-9", thread="t1")


def test_markers_appearing_twice_are_stripped_on_their_last_occurrence():
    parsed = correlation.parse(f"{CANONICAL}::pack=a::flow=f1::pack=b::flow=f2")
    assert parsed == Correlation(f"{CANONICAL}::pack=a::flow=f1", "b", "f2")
    assert parsed.store_key == key(f"{CANONICAL}::pack=a::flow=f1::pack=b", "conv-9")


def test_a_thread_appearing_twice_leaves_the_first_in_the_flow():
    parsed = correlation.parse(f"{CANONICAL}::pack=p::flow=f::thread=t1::thread=t2")
    assert (parsed.thread, parsed.flow, parsed.pack) == ("t2", "f::thread=t1", "p")


def test_a_nonce_appearing_twice_keeps_the_last():
    parsed = correlation.parse(f"{CANONICAL}::pack=p::flow=f::n={OTHER_NONCE}::n={NONCE}")
    assert (parsed.nonce, parsed.flow) == (NONCE, f"f::n={OTHER_NONCE}")


@pytest.mark.parametrize("text", [CANONICAL, f"{CANONICAL}::pack=p", f"{CANONICAL}::flow=f", f"{CANONICAL}::n={NONCE}"])
def test_a_correlation_id_without_pack_and_flow_is_not_resumable(text):
    assert not correlation.parse(text).resumable


def test_build_omits_empty_markers_in_their_fixed_order():
    built = correlation.build(Correlation("my-session", "p", "f", None, "r1", NONCE))
    assert built == f"my-session::pack=p::flow=f::reply=r1::n={NONCE}"


def test_a_built_correlation_id_parses_back_to_the_same_parts():
    parts = Correlation(CANONICAL, "support", "refund", "t1", "r1", NONCE)
    assert correlation.parse(correlation.build(parts)) == parts
