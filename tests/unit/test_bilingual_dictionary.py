"""veco_plugin.data.bilingual_dictionary: MUSE word lists -> piece ids of a real
sentencepiece model (trained here on the fixture text) and its fairseq dictionary;
bad lines, drop reasons, mean of pieces, the token-level file; and a real En-De word list
from the system's gettext catalogs."""

import re
import shutil
from pathlib import Path

import pytest
import torch

from veco_plugin.corpora.gettext_dictionary import (
    DictionaryConfig,
    build_dictionary,
    write_dictionary,
)
from veco_plugin.corpora.subwords import load_sentencepiece, train_sentencepiece
from veco_plugin.corpora.subwords import write_dictionary as write_dict_txt
from veco_plugin.data.bilingual_dictionary import (
    ResolvedDictionary,
    encode_words,
    load_resolved,
    load_word_pairs,
    mean_embeddings,
    read_word_pairs,
    resolve_pairs,
    save_resolved,
)
from veco_plugin.data.dictionary import load_dictionary_with_mask
from veco_plugin.errors import VecoUserError

FIXTURE_TEXT = Path(__file__).resolve().parents[1] / "fixtures" / "text"
SYSTEM_DE = Path("/usr/share/locale/de/LC_MESSAGES")


def train_vocab(out: Path, **options):
    """A 400-piece joint En-De sentencepiece model of the fixture text + its dict.txt
    with <mask> (the pre-training dictionary)."""
    inputs = [str(FIXTURE_TEXT / f"{s}.{lang}") for s in ("mono", "train") for lang in ("en", "de")]
    model = train_sentencepiece(inputs, str(out / "spm"), 400, **options)
    write_dict_txt(model, str(out / "dict.txt"))
    return load_sentencepiece(model), load_dictionary_with_mask(str(out / "dict.txt"))


@pytest.fixture(scope="module")
def vocab(tmp_path_factory):
    return train_vocab(tmp_path_factory.mktemp("vocab"))


@pytest.fixture(scope="module")
def gettext_lists(tmp_path_factory):
    """train.txt / heldout.txt of veco-gettext-dictionary on the first 25 German
    catalogs (copied into a temp locale dir: a quick, real run)."""
    if not any(SYSTEM_DE.glob("*.mo")):
        pytest.skip("no German gettext catalogs on this machine")
    root = tmp_path_factory.mktemp("gettext")
    catalogs = root / "locale" / "de" / "LC_MESSAGES"
    catalogs.mkdir(parents=True)
    for mo in sorted(SYSTEM_DE.glob("*.mo"))[:25]:
        shutil.copy(mo, catalogs / mo.name)
    cfg = DictionaryConfig("de", root / "dict", locale_dir=root / "locale", held_out_words=60)
    write_dictionary(build_dictionary(cfg), cfg)
    return root / "dict" / "train.txt", root / "dict" / "heldout.txt"


def write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


# ------------------------------------------------------------------ reading the word list


def test_read_word_pairs_skips_blank_lines_and_keeps_line_numbers(tmp_path):
    path = write(tmp_path / "d.txt", "house haus\n\n  old\talt \nhouse gebäude\n")
    assert read_word_pairs(path) == [
        (1, ("house", "haus")),
        (3, ("old", "alt")),
        (4, ("house", "gebäude")),
    ]


@pytest.mark.parametrize("line,found", [("save as speichern", 3), ("house", 1)])
def test_a_line_without_two_fields_names_file_and_line(tmp_path, line, found):
    path = write(tmp_path / "d.txt", f"house haus\n\n{line}\nold alt\n")
    with pytest.raises(VecoUserError) as err:
        read_word_pairs(path)
    message = str(err.value)
    assert message.startswith(f"{path}:3: expected 'source_word target_word'"), message
    assert f"found {found}: {line!r}" in message and "\n" not in message


def test_bytes_that_are_not_utf8_name_file_and_line(tmp_path):
    path = tmp_path / "d.txt"
    path.write_bytes(b"house haus\nold \xe4lt\n")
    with pytest.raises(VecoUserError, match=re.escape(f"{path} line 2: not valid UTF-8")):
        read_word_pairs(str(path))


# ------------------------------------------------------------------ encoding and resolving


def test_a_word_is_encoded_as_after_a_space(vocab, tmp_path):
    sp, _ = vocab
    words = ["house", "haus", "fahrrad", "datei", "old", "日本"]
    pieces = encode_words(sp, words)
    # a dummy-prefix model (the default): the sentence-initial form is the same
    assert pieces == sp.encode(words, out_type=str)
    for word, p in zip(words, pieces):  # and so is the form inside a sentence
        assert sp.encode(f"Das ist {word}", out_type=str)[-len(p) :] == p
        assert p[0].startswith("\u2581")
    # a model without a dummy prefix: still the form after a space, not the initial one
    sp_bare, _ = train_vocab(tmp_path, add_dummy_prefix=False)
    bare = encode_words(sp_bare, words)
    assert all(p[0].startswith("\u2581") for p in bare)
    assert bare != sp_bare.encode(words, out_type=str)


LIST = """\
house haus
old alt
house haus
the die
fahrrad bicycle
in in
ｉｎ in
coffee 日本
datei file
"""


def test_drop_reasons_are_counted_and_summarized(vocab, tmp_path):
    sp, dictionary = vocab
    assert encode_words(sp, ["ｉｎ", "日本"]) == [["▁in"], ["▁", "日本"]]  # NFKC; unseen
    resolved = load_word_pairs(write(tmp_path / "d.txt", LIST), sp, dictionary)
    assert list(zip(resolved.src_words, resolved.tgt_words)) == [
        ("house", "haus"),
        ("old", "alt"),
        ("the", "die"),
        ("fahrrad", "bicycle"),
        ("datei", "file"),
    ]
    assert resolved.counts == {
        "read": 9,
        "usable": 5,
        "mean_of_pieces": 4,
        "duplicate": 1,
        "identical": 2,
        "unk_piece": 1,
    }
    assert resolved.summary() == (
        "9 entries: 5 usable (1 single-piece, 4 multi-piece: mean of pieces), 4 dropped: "
        "1 <unk> piece, 2 identical pieces on both sides, 1 duplicate"
    )
    assert resolved.source == str(tmp_path / "d.txt")


def test_skip_multi_piece_drops_entries_with_a_multi_piece_side(vocab, tmp_path):
    sp, dictionary = vocab
    resolved = load_word_pairs(
        write(tmp_path / "d.txt", LIST), sp, dictionary, skip_multi_piece=True
    )
    assert list(zip(resolved.src_words, resolved.tgt_words)) == [("the", "die")]
    assert resolved.counts["mean_of_pieces"] == 0 and resolved.counts["multi_piece"] == 5
    assert resolved.summary() == (
        "9 entries: 1 usable (1 single-piece, 0 multi-piece: mean of pieces), 8 dropped: "
        "1 <unk> piece, 5 multi-piece (skipped), 2 identical pieces on both sides"
    )  # the repeated "house haus" is dropped as multi-piece: the first reason that applies
    assert resolved.src_ids.shape == (1, 1) and resolved.src_mask.all()


def test_ids_are_the_dictionary_indices_of_the_pieces(vocab):
    sp, dictionary = vocab
    resolved = resolve_pairs([("house", "haus"), ("fahrrad", "alt")], sp, dictionary)
    assert resolved.src_ids.tolist() == [
        [dictionary.index("▁house")] + [dictionary.pad()] * 6,
        [dictionary.index(p) for p in ["▁", "f", "a", "h", "r", "r", "ad"]],
    ]
    assert resolved.tgt_ids.tolist() == [
        [dictionary.index(p) for p in ["▁", "h", "au", "s"]],
        [dictionary.index(p) for p in ["▁", "al", "t"]] + [dictionary.pad()],
    ]
    assert resolved.src_mask.sum(1).tolist() == [1, 7]
    assert resolved.tgt_mask.tolist() == [[True] * 4, [True] * 3 + [False]]
    assert resolved.src_ids.dtype == torch.long and resolved.src_mask.dtype == torch.bool


def test_no_pieces_is_a_reason(vocab):
    sp, dictionary = vocab
    resolved = resolve_pairs([("\u200b", "haus"), ("old", "alt")], sp, dictionary)
    assert len(resolved) == 1 and resolved.counts["no_pieces"] == 1


# ------------------------------------------------------------------ mean of pieces


def test_mean_embeddings_is_the_mean_of_the_piece_rows():
    table = torch.arange(40, dtype=torch.float64).view(10, 4).requires_grad_()
    ids = torch.tensor([[3, 1, 1, 1], [2, 5, 7, 9], [4, 6, 1, 1], [1, 1, 1, 1]])
    mask = torch.tensor([[1, 0, 0, 0], [1, 1, 1, 1], [1, 1, 0, 0], [0, 0, 0, 0]]).bool()
    out = mean_embeddings(table, ids, mask)
    rows = table.detach().tolist()
    hand = [
        rows[3],
        [(rows[2][c] + rows[5][c] + rows[7][c] + rows[9][c]) / 4 for c in range(4)],
        [(rows[4][c] + rows[6][c]) / 2 for c in range(4)],
        [0.0] * 4,
    ]
    assert torch.equal(out, torch.tensor(hand, dtype=torch.float64))
    out.sum().backward()  # d/dE[v] = sum over words of (times v is a piece) / pieces
    grad = [0.0] * 10
    for word, m in zip(ids.tolist(), mask.tolist()):
        for v, on in zip(word, m):
            grad[v] += on / max(sum(m), 1)
    assert torch.equal(table.grad, torch.tensor(grad, dtype=torch.float64)[:, None].expand(10, 4))


def test_mean_embeddings_of_a_resolved_dictionary(vocab):
    sp, dictionary = vocab
    resolved = resolve_pairs([("fahrrad", "bicycle"), ("the", "die")], sp, dictionary)
    table = torch.randn(len(dictionary), 8, dtype=torch.float64)
    got = mean_embeddings(table, resolved.tgt_ids, resolved.tgt_mask)
    pieces = [[dictionary.index(p) for p in w] for w in encode_words(sp, ["bicycle", "die"])]
    want = torch.stack([table[p].mean(0) for p in pieces])
    torch.testing.assert_close(got, want, rtol=0, atol=1e-12)


# ------------------------------------------------------------------ the token-level file


def assert_same(a: ResolvedDictionary, b: ResolvedDictionary) -> None:
    assert (a.src_words, a.tgt_words, a.pad, a.counts, a.source) == (
        b.src_words,
        b.tgt_words,
        b.pad,
        b.counts,
        b.source,
    )
    for name in ("src_ids", "src_mask", "tgt_ids", "tgt_mask"):
        assert torch.equal(getattr(a, name), getattr(b, name)), name


def test_save_and_load_round_trip(vocab, tmp_path):
    sp, dictionary = vocab
    resolved = load_word_pairs(write(tmp_path / "d.txt", LIST), sp, dictionary)
    out = tmp_path / "d.resolved.tsv"
    save_resolved(resolved, str(out))
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("# {") and str(tmp_path / "d.txt") in lines[0]
    assert lines[2] == "# " + resolved.summary()
    assert lines[3] == f"house\thaus\t{dictionary.index('▁house')}\t" + " ".join(
        str(dictionary.index(p)) for p in ["▁", "h", "au", "s"]
    )
    assert len(lines) == 3 + len(resolved) and not list(tmp_path.glob("*.part"))
    loaded = load_resolved(str(out), dictionary)
    assert_same(loaded, resolved)
    save_resolved(loaded, str(tmp_path / "again.tsv"))
    assert (tmp_path / "again.tsv").read_bytes() == out.read_bytes()


def test_load_refuses_bad_lines_and_other_vocabularies(vocab, tmp_path):
    sp, dictionary = vocab
    resolved = resolve_pairs([("house", "haus"), ("old", "alt")], sp, dictionary)
    good = tmp_path / "good.tsv"
    save_resolved(resolved, str(good))
    lines = good.read_text(encoding="utf-8").splitlines()
    bad = write(tmp_path / "bad.tsv", "\n".join(lines[:4] + ["old\talt\t12"]) + "\n")
    with pytest.raises(VecoUserError, match=re.escape(f"{bad}:5: expected 4 tab-separated")):
        load_resolved(bad)
    bad = write(tmp_path / "bad2.tsv", "\n".join(lines[:4] + ["old\talt\t12\tx"]) + "\n")
    with pytest.raises(VecoUserError, match=re.escape(f"{bad}:5: 'x' is not a list of token")):
        load_resolved(bad)
    with pytest.raises(VecoUserError, match="no header"):
        load_resolved(write(tmp_path / "muse.txt", "house haus\nold alt\nthe die\n"))
    small = load_dictionary_with_mask(write(tmp_path / "small.txt", "▁the 1\n"))
    with pytest.raises(VecoUserError, match="made for another vocabulary"):
        load_resolved(str(good), small)


# ------------------------------------------------------------------ a real word list


def test_real_gettext_word_lists(vocab, gettext_lists, tmp_path):
    sp, dictionary = vocab
    for path in gettext_lists:
        lines = [x for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
        resolved = load_word_pairs(str(path), sp, dictionary)
        c = resolved.counts
        dropped = sum(n for k, n in c.items() if k not in ("read", "usable", "mean_of_pieces"))
        assert c["read"] == len(lines) and c["usable"] == len(resolved) > 0
        assert c["usable"] + dropped == c["read"]
        assert re.fullmatch(
            r"\d+ entries: \d+ usable \(\d+ single-piece, \d+ multi-piece: mean of pieces\), "
            r"\d+ dropped(: .*)?",
            resolved.summary(),
        )
        # every kept piece is a known piece; the padding is fairseq's pad
        unk, pad = dictionary.unk(), dictionary.pad()
        for ids, mask in (
            (resolved.src_ids, resolved.src_mask),
            (resolved.tgt_ids, resolved.tgt_mask),
        ):
            assert not (ids[mask] == unk).any() and (ids[~mask] == pad).all()
            assert mask[:, 0].all()
        pairs = set(resolved.pieces())
        assert len(pairs) == len(resolved) and all(s != t for s, t in pairs)
        save_resolved(resolved, str(tmp_path / "r.tsv"))
        assert_same(load_resolved(str(tmp_path / "r.tsv"), dictionary), resolved)
