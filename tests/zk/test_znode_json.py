"""The JSON of znodes: written as Jackson writes it, read with Kafka's typed reads."""

from __future__ import annotations

import pytest

from wirekafka.zk.znode_json import ZnodeFormatError, check_int, dumps, parse_object


def test_dumps_is_compact_utf8_in_the_order_given():
    assert dumps({"b": 1, "a": ["x", None], "c": "caf\u00e9"}) == (
        '{"b":1,"a":["x",null],"c":"caf\u00e9"}'.encode()
    )
    with pytest.raises(ValueError):
        dumps({"a": float("nan")})


def test_check_int_refuses_bools_floats_and_out_of_range():
    assert check_int("n", 5) == 5
    for bad in (True, 1.0, "1", 2**31):
        with pytest.raises(ValueError, match="n must be an int"):
            check_int("n", bad)
    assert check_int("n", 2**40, 0, 2**63 - 1) == 2**40


def test_required_and_optional_reads():
    js = parse_object("SomeZNode", b'{"a":1,"b":null,"s":"x","o":{"k":[1,2]},"l":["p"]}')
    assert js.int32("a") == 1
    assert js.optional_int32("b") is None and js.optional_int32("missing") is None
    assert js.string("s") == "x" and js.optional_string("b") is None
    assert js.object("o").int32_list("k") == (1, 2)
    assert js.optional_object("b") is None
    assert js.string_list("l") == ("p",)
    assert list(js) == ["a", "b", "s", "o", "l"] and "o" in js
    with pytest.raises(
        ZnodeFormatError, match=r"^SomeZNode: 'b' must be a 32-bit integer, got null"
    ):
        js.int32("b")  # required: null is not an int
    with pytest.raises(ZnodeFormatError, match=r"^SomeZNode: the key 'missing' is missing"):
        js.string("missing")


def test_a_nested_key_is_named_by_its_path():
    js = parse_object("SomeZNode", b'{"o":{"k":[1,"2"],"n":{}}}')
    with pytest.raises(
        ZnodeFormatError, match=r"'o\.k\[1\]' must be a 32-bit integer, got a string"
    ):
        js.object("o").int32_list("k")
    with pytest.raises(ZnodeFormatError, match=r"the key 'o\.n\.x' is missing"):
        js.object("o").object("n").int32("x")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "the znode has no data"),
        (b"{", "not JSON"),
        (b'{"a":NaN}', "not JSON"),
        (b"[1]", "expected a JSON object, got an array"),
        (b"\xff", "not UTF-8"),
        ("{}", "expected the znode's bytes, got str"),
    ],
)
def test_what_is_not_a_json_object_is_refused(data, message):
    with pytest.raises(ZnodeFormatError, match=f"^SomeZNode: {message}"):
        parse_object("SomeZNode", data)


def test_a_long_value_is_not_copied_into_the_error():
    js = parse_object("SomeZNode", b'{"a":"' + b"x" * 10_000 + b'","b":"short"}')
    with pytest.raises(ZnodeFormatError) as info:
        js.int32("a")
    assert str(info.value) == "SomeZNode: 'a' must be a 32-bit integer, got a string"
    with pytest.raises(ZnodeFormatError) as info:
        js.int32("b")
    assert str(info.value) == "SomeZNode: 'b' must be a 32-bit integer, got a string 'short'"
