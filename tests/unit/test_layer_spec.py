"""``veco_plugin.models.layer_spec``: the one comma-separated layer-list parser, the range
and repetition check, and layer counting in state dicts."""

import pytest

from veco_plugin.models.layer_spec import count_layers, layer_list_problem, parse_layer_list


def test_parse_layer_list():
    assert parse_layer_list("18,19,20") == [18, 19, 20]
    assert parse_layer_list(" 3, 1 ,,2,") == [3, 1, 2]
    assert parse_layer_list("") == []
    assert parse_layer_list("-1") == [-1]
    for bad in ("1;2", "a,b", "last:3", "1.5"):
        with pytest.raises(ValueError):
            parse_layer_list(bad)


def test_layer_list_problem():
    assert layer_list_problem([0, 1, 2], 3, "the encoder") is None
    assert layer_list_problem([], 3, "the encoder") is None
    assert layer_list_problem([1, 3], 3, "the encoder") == (
        "layer 3 out of range (the encoder has 3 layers, 0-2)"
    )
    assert layer_list_problem([-1], 3, "x") == "layer -1 out of range (x has 3 layers, 0-2)"
    assert layer_list_problem([1, 1], 3, "x") == "a layer appears twice"
    assert layer_list_problem([1, 1], 3, "x", unique=False) is None
    assert layer_list_problem([5, 5], 3, "x").startswith("layer 5 out of range")  # range first


def test_count_layers():
    keys = [
        "encoder.layers.0.fc1.weight",
        "encoder.layers.11.fc1.weight",
        "decoder.layers.2.fc1.weight",
        "encoder.embed_tokens.weight",
    ]
    assert count_layers(keys, "encoder.layers") == 12
    assert count_layers(keys, "decoder.layers") == 3
    assert count_layers(keys, "encoder.sentence_encoder.layers") == 0
