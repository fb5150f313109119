"""veco-reduce-vocab and veco-init-nmt --vocab-map: a kept token's embedding, and the
whole model's computation on kept tokens, are exactly the pre-trained ones."""

import os
import re

import pytest
import torch
from fairseq import checkpoint_utils
from fairseq.data import Dictionary

from tests.helpers.nmt import (
    TOL,
    dictionary_files,
    max_diff,
    run_init_nmt,
    save_pretrained,
    translation_task,
)
from tests.helpers.toy import build, model_args
from veco_plugin.checkpoints.vocab_map import (
    ReduceVocabError,
    count_tokens,
    read_vocab_map,
    select_rows,
)
from veco_plugin.cli import reduce_vocab
from veco_plugin.models.veco_transformer import dictionary_digest
from veco_plugin.nmt_init import NmtInitError


def test_select_rows_keeps_specials_data_types_and_mask_last():
    symbols = ["<s>", "<pad>", "</s>", "<unk>", "a", "b", "c", "d", "<mask>"]
    counts = count_tokens(["d b b", "zz d", "b"])
    assert select_rows(symbols, 4, counts) == [0, 1, 2, 3, 5, 7, 8]
    assert select_rows(symbols, 4, counts, min_count=2) == [0, 1, 2, 3, 5, 7, 8]
    assert select_rows(symbols, 4, counts, min_count=3) == [0, 1, 2, 3, 5, 8]
    assert select_rows(symbols, 4, count_tokens(["<mask> a"])) == [0, 1, 2, 3, 4, 8]
    with pytest.raises(ReduceVocabError, match="no <mask>"):
        select_rows(symbols[:-1], 4, counts)


@pytest.fixture
def setup(tmp_path):
    """A pre-trained tiny veco with a 50-word dictionary, fine-tuning text using 9 words."""
    d = dictionary_files(tmp_path)
    veco = build("veco_tiny", d, seed=3).eval()
    save_pretrained(veco, model_args("veco_tiny"), tmp_path / "veco.pt")
    (tmp_path / "train.en").write_text("w3 w7 w7 w12\nw40 w3 oov\n")
    (tmp_path / "train.de").write_text("w8 w9 w41 w49\nw12 w30\n")
    return veco, d, tmp_path


def _reduce(tmp_path, *extra):
    args = reduce_vocab.get_parser().parse_args(
        ["--dict", str(tmp_path / "dict.txt"), "--output-dir", str(tmp_path / "vocab"),
         "--data", str(tmp_path / "train.en"), str(tmp_path / "train.de"), *extra]
    )  # fmt: skip
    return reduce_vocab.main(args)


def _init(tmp_path, out, *extra):
    return run_init_nmt("--pretrained", tmp_path / "veco.pt", "--output", out, *extra)


def test_reduce_vocab_writes_dictionary_and_row_map(setup):
    _, d, tmp_path = setup
    rows = _reduce(tmp_path)
    words = ["w3", "w7", "w8", "w9", "w12", "w30", "w40", "w41", "w49"]
    assert rows == [0, 1, 2, 3] + [d.index(w) for w in words] + [d.index("<mask>")]
    reduced = Dictionary.load(str(tmp_path / "vocab" / "dict.txt"))
    reduced.add_symbol("<mask>")  # as the task does
    old, symbols = read_vocab_map(str(tmp_path / "vocab" / "vocab_map.tsv"))
    assert old == rows and symbols == reduced.symbols
    assert [d.symbols[r] for r in rows] == reduced.symbols
    assert reduced.count[reduced.index("w7")] == 2


def test_a_data_file_named_twice_is_counted_once(setup):
    _, d, tmp_path = setup
    once = _reduce(tmp_path)
    twice = _reduce(tmp_path, str(tmp_path / "train.en"), os.path.join(tmp_path, ".", "train.de"))
    assert twice == once
    reduced = Dictionary.load(str(tmp_path / "vocab" / "dict.txt"))
    assert reduced.count[reduced.index("w7")] == 2 and reduced.count[reduced.index("w3")] == 2


def test_reduced_model_is_exact(setup):
    veco, d, tmp_path = setup
    _reduce(tmp_path)
    full = _init(tmp_path, tmp_path / "full.pt")
    vocab_map = str(tmp_path / "vocab" / "vocab_map.tsv")
    small = _init(tmp_path, tmp_path / "small.pt", "--vocab-map", vocab_map)
    old, symbols = read_vocab_map(vocab_map)
    # a token's embedding in the resized model equals its embedding before
    for key in ("encoder.embed_tokens.weight", "decoder.output_projection.weight"):
        assert small["model"][key].shape[0] == len(old) == 14
        for new_id, symbol in enumerate(symbols):
            assert torch.equal(small["model"][key][new_id], full["model"][key][d.index(symbol)])
    # the task (data binarized with the reduced dict.txt) loads it; ids line up
    data = tmp_path / "data"
    data.mkdir()
    task = translation_task(data, str(tmp_path / "vocab" / "dict.txt"))
    assert task.src_dict.symbols == symbols
    models, _ = checkpoint_utils.load_model_ensemble([str(tmp_path / "small.pt")], task=task)
    small_model = models[0]
    assert int(small_model.dictionary_digest) == dictionary_digest(symbols)
    full_model = _full_model(tmp_path, d)
    # the same sentences, encoded with each dictionary, give the same states and logits
    src, tgt = "w3 w7 w40 w12 oov", "w8 w41 w49 w9"
    pad = d.pad()
    with torch.no_grad():
        outs = []
        for model, dictionary in ((full_model, d), (small_model.eval(), task.src_dict)):
            x = dictionary.encode_line(src, add_if_not_exist=False).long().unsqueeze(0)
            y = dictionary.encode_line(tgt, add_if_not_exist=False).long().unsqueeze(0)
            enc = model.encoder(x, src_lengths=None)
            logits, _ = model.decoder(torch.roll(y, 1, 1), encoder_out=enc)
            outs.append((enc["encoder_out"][0], logits, x))
    (h_full, logits_full, x_full), (h_small, logits_small, x_small) = outs
    assert x_small[0, -2] == task.src_dict.unk() and x_full[0, -2] == d.unk()
    assert max_diff(h_small, h_full, x_small, pad) <= TOL
    assert (logits_small - logits_full[..., old]).abs().max().item() <= TOL


def _full_model(tmp_path, d):
    data = tmp_path / "full_data"
    data.mkdir()
    task = translation_task(data, str(tmp_path / "dict.txt"))
    return checkpoint_utils.load_model_ensemble([str(tmp_path / "full.pt")], task=task)[0][0].eval()


def test_vocab_map_must_match_the_pretrained_dictionary(setup):
    _, _, tmp_path = setup
    _reduce(tmp_path)
    path = tmp_path / "vocab" / "vocab_map.tsv"
    lines = path.read_text().splitlines()
    lines[5] = lines[5].replace("\tw7", "\tw20")
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(NmtInitError, match="does not match the pre-training dictionary.*'w20'"):
        _init(tmp_path, tmp_path / "x.pt", "--vocab-map", str(path))
    path.write_text("0\t0\t<s>\n2\t1\t<pad>\n")
    with pytest.raises(NmtInitError, match="new ids must be 0, 1, 2"):
        _init(tmp_path, tmp_path / "x.pt", "--vocab-map", str(path))
    assert not os.path.exists(tmp_path / "x.pt")


def test_cli_errors(setup, tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        reduce_vocab.cli_main(
            ["--dict", str(tmp_path / "dict.txt"), "--data", str(tmp_path / "missing.en"),
             "--output-dir", str(tmp_path / "v")]
        )  # fmt: skip
    assert exited.value.code == 1
    assert re.match(
        "^veco-reduce-vocab: error: --data .*missing.en: no such", capsys.readouterr().err
    )
