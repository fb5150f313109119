"""Word alignments -> piece links (WEAM §2.2): word groups of a real sentencepiece model,
the piece mapping with truncation, fairseq-preprocess --align-suffix output loaded,
checked and collated into batch["links"]."""

import os
import shutil

import numpy as np
import pytest
import torch
from fairseq import utils
from fairseq.data import data_utils, indexed_dataset

from tests.helpers.runner import REPO, USER_DIR, run, train_cfg
from veco_plugin.corpora import subwords
from veco_plugin.data.dictionary import load_dictionary_with_mask
from veco_plugin.data.masking import MaskingScheme
from veco_plugin.data.pair_dataset import VecoPairDataset
from veco_plugin.data.word_links import (
    alignment_prefix,
    load_word_links,
    piece_links,
    word_index,
    word_starts,
)
from veco_plugin.errors import VecoUserError

TEXT = os.path.join(REPO, "tests", "fixtures", "text")
LINES = [0, 1, 2, 3, 4]
EMPTY_EN = 2  # the English side of this line is emptied: the pair is skipped
PHARAOH = ["0-0 1-1 4-3 5-3", "0-0 1-1 2-2 3-4", "", "0-0 2-1 1-2", "0-0 3-3 6-5"]


def _read(name):
    with open(os.path.join(TEXT, name), encoding="utf-8") as f:
        return f.read().splitlines()


@pytest.fixture(scope="module")
def spm(tmp_path_factory):
    root = tmp_path_factory.mktemp("word_links")
    model = subwords.train_sentencepiece(
        [os.path.join(TEXT, "train.en"), os.path.join(TEXT, "train.de")], str(root / "spm"), 400
    )
    os.makedirs(root / "data")
    subwords.write_dictionary(model, str(root / "data" / "dict.txt"))
    return root, subwords.load_sentencepiece(model)


@pytest.fixture(scope="module")
def data(spm):
    """DATA/dict.txt and DATA/bi/en-de/train.* (+ train.align.en-de.*) from one real
    fairseq-preprocess --align-suffix run on five fixture pairs."""
    root, sp = spm
    en, de = [_read(f"train.{lang}")[: len(LINES)] for lang in ("en", "de")]
    en[EMPTY_EN] = ""
    text = root / "text"
    os.makedirs(text)
    for lang, lines in (("en", en), ("de", de)):
        pieces = [" ".join(sp.encode(line, out_type=str)) for line in lines]
        (text / f"train.{lang}").write_text("\n".join(pieces) + "\n", encoding="utf-8")
    (text / "train.align").write_text("\n".join(PHARAOH) + "\n", encoding="utf-8")
    bi = root / "data" / "bi" / "en-de"
    dictionary = str(root / "data" / "dict.txt")
    run(
        "fairseq-preprocess",
        ["--source-lang", "en", "--target-lang", "de", "--srcdict", dictionary]
        + ["--tgtdict", dictionary, "--trainpref", text / "train", "--destdir", bi]
        + ["--align-suffix", "align", "--workers", "1"],
    )
    return root / "data", sp, en, de


def _sides(directory, d):
    return [
        data_utils.load_indexed_dataset(os.path.join(directory, f"train.en-de.{lang}"), d)
        for lang in ("en", "de")
    ]


def _pair_dataset(sides, links, d, max_len):
    scheme = MaskingScheme(0.15, d.index("<mask>"), d.pad(), d.nspecial, len(d))
    return VecoPairDataset.parallel(
        *sides, links=links, name="bi", bos=d.bos(), max_len=max_len, scheme=scheme, shuffle=False
    )


def _expected(sp, en, de, line, max_len):
    """Hand-computed position links of ``line``, from sentencepiece's piece strings:
    word k = k-th group of pieces starting with "▁"; piece p at position p + 1; a side
    keeps max_len - 2 pieces. Returns (kept links, dropped count)."""
    groups = []
    for text in (en[line], de[line]):
        pieces = sp.encode(text, out_type=str)
        words, k = [], -1
        for p, piece in enumerate(pieces):
            k += piece.startswith("\u2581") or p == 0
            words.append(k)
        groups.append(words)
    kept, dropped = set(), 0
    for link in PHARAOH[line].split():
        a, b = map(int, link.split("-"))
        for p in [p for p, w in enumerate(groups[0]) if w == a]:
            for q in [q for q, w in enumerate(groups[1]) if w == b]:
                if p < max_len - 2 and q < max_len - 2:
                    kept.add((p + 1, q + 1))
                elif (p + 1, q + 1) not in kept:
                    dropped += 1
    return kept, dropped


def test_word_groups_of_real_sentencepiece_pieces_are_the_whitespace_words(spm):
    root, sp = spm
    d = load_dictionary_with_mask(str(root / "data" / "dict.txt"))
    starts = word_starts(d)
    assert not starts[[d.bos(), d.pad(), d.eos(), d.unk(), d.index("<mask>")]].any()
    for lang in ("en", "de"):
        for line in _read(f"train.{lang}")[:30]:
            pieces = sp.encode(line, out_type=str)
            words = word_index(np.array([d.index(p) for p in pieces]), starts)
            assert words[0] == 0 and words[-1] == len(line.split()) - 1
            for k, word in enumerate(line.split()):
                group = [p for p, w in zip(pieces, words) if w == k]
                assert "".join(group).lstrip("\u2581") == word


def test_piece_links_of_hand_built_words_with_truncation():
    x_words = np.array([0, 0, 1, 2])  # source pieces 0-1 are word 0 (positions 1-2)
    y_words = np.array([0, 1, 1])  # target pieces 1-2 are word 1 (positions 2-3)
    word_links = np.array([[0, 1], [2, 0]])
    links, dropped = piece_links(word_links, x_words, y_words, 4, 3)
    assert links.tolist() == [[1, 2], [1, 3], [2, 2], [2, 3], [4, 1]] and dropped == 0
    links, dropped = piece_links(word_links, x_words, y_words, 3, 2)  # x keeps 3, y keeps 2
    assert links.tolist() == [[1, 2], [2, 2]] and dropped == 3
    empty, dropped = piece_links(np.zeros((0, 2)), x_words, y_words, 4, 3)
    assert empty.shape == (0, 2) and dropped == 0


def test_preprocess_align_suffix_loads_and_collates_into_batch_links(data, caplog):
    root, sp, en, de = data
    directory = str(root / "bi" / "en-de")
    assert os.path.exists(alignment_prefix(directory, "train", "en", "de") + ".bin")
    d = load_dictionary_with_mask(str(root / "dict.txt"))
    sides = _sides(directory, d)
    links = load_word_links(directory, "train", "en", "de", d, sides)
    assert len(links) == len(LINES) and links.words(3).tolist() == [[0, 0], [2, 1], [1, 2]]
    max_len = 9  # truncates the longer pairs: links beyond a side are dropped
    ds = _pair_dataset(sides, links, d, max_len)
    assert ds.first_index.tolist() == [0, 1, 3, 4]  # the empty English line is skipped
    batch = ds.collater([ds[i] for i in range(len(ds))])
    width = batch["pair_tokens"].size(1)
    assert batch["links"].shape == (4, width, width) and batch["links"].dtype == torch.bool
    total_dropped = 0
    for b, line in enumerate(ds.first_index):
        kept, dropped = _expected(sp, en, de, line, max_len)
        assert kept, line
        assert set(map(tuple, batch["links"][b].nonzero().tolist())) == kept
        total_dropped += dropped
        x, y = batch["pair_tokens"][b], batch["pair_tokens"][len(ds) + b]
        for i, j in kept:  # links join pieces, never <s>, </s> or padding
            assert x[i] not in (d.bos(), d.eos(), d.pad()) and y[j] not in (d.bos(), d.eos())
    assert total_dropped > 0
    assert f"dropping {total_dropped} word-alignment piece links beyond 9" in caplog.text


def test_bitext_without_alignments_gives_none_and_batches_without_links(data, tmp_path):
    root, _, _, _ = data
    bare = tmp_path / "bi"
    shutil.copytree(root / "bi" / "en-de", bare)
    for name in os.listdir(bare):
        if ".align." in name:
            os.remove(bare / name)
    d = load_dictionary_with_mask(str(root / "dict.txt"))
    sides = _sides(str(bare), d)
    assert load_word_links(str(bare), "train", "en", "de", d, sides) is None
    ds = _pair_dataset(sides, None, d, 64)
    assert "links" not in ds.collater([ds[0], ds[1]])


def _rewrite_alignments(root, tmp_path, lines):
    """A copy of the bitext whose alignments hold ``lines`` (written by fairseq's own
    builder and parser, as fairseq-preprocess does)."""
    directory = tmp_path / "bi"
    shutil.copytree(root / "bi" / "en-de", directory)
    prefix = alignment_prefix(str(directory), "train", "en", "de")
    builder = indexed_dataset.make_builder(prefix + ".bin", "mmap")
    for line in lines:
        builder.add_item(utils.parse_alignment(line))
    builder.finalize(prefix + ".idx")
    return str(directory), prefix + ".bin"


def test_alignments_with_another_line_count_are_refused(data, tmp_path):
    root, _, _, _ = data
    directory, path = _rewrite_alignments(root, tmp_path, PHARAOH[:4])
    d = load_dictionary_with_mask(str(root / "dict.txt"))
    with pytest.raises(VecoUserError) as error:
        load_word_links(directory, "train", "en", "de", d, _sides(directory, d))
    message = str(error.value)
    assert path in message and "has 4 lines" in message and "has 5" in message
    assert "--align-suffix" in message and "\n" not in message


@pytest.mark.parametrize("bad", ["0-0 0-99", "99-0"])
def test_a_link_beyond_a_lines_words_is_refused_with_file_line_and_link(data, tmp_path, bad):
    root, _, en, de = data
    directory, path = _rewrite_alignments(root, tmp_path, PHARAOH[:1] + [bad] + PHARAOH[2:])
    d = load_dictionary_with_mask(str(root / "dict.txt"))
    with pytest.raises(VecoUserError) as error:
        load_word_links(directory, "train", "en", "de", d, _sides(directory, d))
    message = str(error.value)
    link = bad.split()[-1]
    assert f"{path} line 2: link {link} is out of range" in message and "\n" not in message
    assert f"{len(en[1].split())} en and {len(de[1].split())} de words" in message


def test_task_loads_the_alignments_of_a_pair(data):
    from fairseq import tasks

    root, _, _, _ = data
    cfg = train_cfg(
        [str(root), "--user-dir", USER_DIR, "--task", "veco_pretraining", "--arch", "veco_tiny"]
        + ["--bi-pairs", "en-de", "--criterion", "ca_mlm", "--max-bi-positions", "64"]
        + ["--max-tokens", "4000"]
    )
    task = tasks.setup_task(cfg.task)
    task.load_dataset("train")
    itr = task.get_batch_iterator(task.dataset("train"), max_tokens=4000, seed=1)
    batch = next(itr.next_epoch_itr(shuffle=False))["bi"]
    width = int(batch["half_lengths"].max())  # the longest side (the pairs are packed)
    assert batch["links"].shape == (batch["nsentences"], width, width)
    assert batch["links"].any(-1).any(-1).all()  # every kept pair has links
