"""``--align-dictionary-pieces``: ``dict.txt`` token pairs (``veco-derive-language``'s
``bilingual.txt``, a piece and its U+E000 copy) for ALIGN-MLM's ``align`` term, its
held-out score and DICT-MLM, on a real sentencepiece model and the joint ``dict.txt``
that ``veco-derive-language`` writes for it."""

import re

import pytest
import torch
import torch.nn.functional as F

from tests.helpers.toy import ToyTask, build, pair_batch
from tests.unit.test_bilingual_dictionary import FIXTURE_TEXT
from veco_plugin.corpora.derived import MARKER, DeriveConfig, derive_language
from veco_plugin.corpora.subwords import load_sentencepiece, train_sentencepiece
from veco_plugin.corpora.subwords import write_dictionary as write_dict_txt
from veco_plugin.data.bilingual_dictionary import (
    ResolvedDictionary,
    load_token_pairs,
    load_word_pairs,
    read_token_pairs,
    save_resolved,
)
from veco_plugin.data.dictionary import load_dictionary_with_mask
from veco_plugin.errors import VecoUserError
from veco_plugin.objectives import build_criterion

ALPHA = 10.0


@pytest.fixture(scope="module")
def derived(tmp_path_factory):
    """``(root, sp, d, pairs)``: a 400-piece En-De sentencepiece model of the fixture text,
    veco-derive-language's joint dict.txt (``d``, with ``<mask>``) and its bilingual.txt
    split into ``root/train.txt`` (all but 10 lines) and ``root/heldout.txt`` (10);
    ``pairs``: the ``(piece, copy)`` lines of train.txt."""
    root = tmp_path_factory.mktemp("pieces")
    texts = [str(FIXTURE_TEXT / f"{s}.{lang}") for s in ("mono", "train") for lang in ("en", "de")]
    model = train_sentencepiece(texts, str(root / "spm"), 400)
    write_dict_txt(model, str(root / "dict.txt"))
    cfg = DeriveConfig.from_flags(model, str(root / "dict.txt"), str(root / "out"), [], [], "trans")
    derive_language(cfg)
    lines = (root / "out" / "bilingual.txt").read_text(encoding="utf-8").splitlines()
    (root / "train.txt").write_text("".join(f"{x}\n" for x in lines[:-10]), encoding="utf-8")
    (root / "heldout.txt").write_text("".join(f"{x}\n" for x in lines[-10:]), encoding="utf-8")
    d = load_dictionary_with_mask(str(root / "out" / "dict.txt"))
    pairs = [tuple(x.split()) for x in lines[:-10]]
    return root, load_sentencepiece(model), d, pairs


def _align(root, d, **settings):
    settings.setdefault("align_dictionary", str(root / "train.txt"))
    settings.setdefault("align_dictionary_pieces", True)
    return build_criterion(
        "align_mlm", ToyTask(d), save_dir=str(root / "ck"), align_weight=ALPHA, **settings
    )


def test_token_pairs_resolve_to_exactly_the_rows_they_name(derived):
    root, sp, d, pairs = derived
    assert pairs and all(c == MARKER + p for p, c in pairs)
    inner = [p for p, _ in pairs if not p.startswith("\u2581")]
    assert inner, "bilingual.txt has a word-internal piece"
    resolved = load_token_pairs(str(root / "train.txt"), d)
    assert resolved.src_words == [p for p, _ in pairs]
    assert resolved.tgt_words == [c for _, c in pairs]
    assert list(resolved.pieces()) == [((d.index(p),), (d.index(c),)) for p, c in pairs]
    assert resolved.counts == {"read": len(pairs), "usable": len(pairs), "mean_of_pieces": 0}
    assert d.unk() not in resolved.src_ids and d.unk() not in resolved.tgt_ids
    # a word-internal piece is its own row, not the row of "▁" + piece
    row = {w: int(i) for w, i in zip(resolved.src_words, resolved.src_ids[:, 0])}
    assert all(row[p] == d.indices[p] != d.index("\u2581" + p) for p in inner)
    lines = read_token_pairs(str(root / "train.txt"), d)
    assert lines[0] == (1, pairs[0], (d.index(pairs[0][0]), d.index(pairs[0][1])))
    # what the word reader made of the same file: copies through sentencepiece are <unk>
    as_words = load_word_pairs(str(root / "train.txt"), sp, d)
    assert as_words.counts.get("unk_piece", 0) == len(pairs) and len(as_words) == 0


def test_align_loss_over_token_pairs_is_the_hand_computed_cosine_of_their_rows(derived):
    root, _, d, pairs = derived
    model = build("veco_tiny", d, seed=0).eval()
    batch = pair_batch(d, seed=0)
    loss, size, log = _align(root, d)(model, {"mono": batch})

    E = model.encoder.sentence_encoder.embed_tokens.weight  # (V, C)
    src = E[[d.index(p) for p, _ in pairs]]
    tgt = E[[d.index(c) for _, c in pairs]]
    l_align = -F.cosine_similarity(src, tgt, dim=-1).mean()
    torch.testing.assert_close(loss / size, (log["mono_mlm_loss"] + ALPHA * l_align * size) / size)
    assert int(log["align_entries"]) == len(pairs)

    # the same rows given as resolved one-piece word pairs: the same loss, exactly
    words = [(f"s{i}", f"t{i}") for i in range(len(pairs))]
    ids = [((d.index(p),), (d.index(c),)) for p, c in pairs]
    save_resolved(ResolvedDictionary.from_pieces(words, ids, d.pad()), str(root / "r.tsv"))
    same, _, _ = _align(root, d, align_dictionary=str(root / "r.tsv"))(model, {"mono": batch})
    assert torch.equal(loss, same)


def test_gradient_reaches_exactly_the_rows_of_the_pairs(derived):
    root, _, d, pairs = derived
    model = build("veco_tiny", d, seed=0)
    loss, _, _ = _align(root, d, mlm_weight=0.0)(model, {"mono": pair_batch(d, seed=1)})
    loss.backward()
    grad = model.encoder.sentence_encoder.embed_tokens.weight.grad
    touched = set(grad.abs().sum(1).nonzero().flatten().tolist())
    assert touched == {d.index(t) for pair in pairs for t in pair}


def test_heldout_token_pairs_are_scored_at_validation(derived):
    root, _, d, _ = derived
    criterion = _align(root, d, align_heldout=str(root / "heldout.txt"))
    model = build("veco_tiny", d, seed=0).eval()
    _, _, log = criterion(model, {"mono": pair_batch(d)})
    assert int(log["align_queries"]) == 10 and 0 <= int(log["align_hits"]) <= 10


def test_dict_mlm_and_align_read_one_token_dictionary(derived):
    root, _, d, pairs = derived
    model = build("veco_tiny", d, seed=0).eval()
    batch = pair_batch(d, n_pairs=12, seed=3)
    settings = dict(align_dictionary=str(root / "train.txt"), align_dictionary_pieces=True)
    both = build_criterion(
        "veco_terms",
        ToyTask(d),
        terms="mono_dict=1,align=10",
        dict_mlm_prob=1.0,
        save_dir=str(root / "ck"),
        **settings,
    )
    _, _, log = both(model, {"mono": batch})
    assert int(log["align_entries"]) == len(pairs)
    dictionary_ids = {d.index(t) for pair in pairs for t in pair}
    masked = batch["pair_target"][batch["pair_target"].ne(d.pad())]
    assert int(log["dict_swapped"]) == sum(int(t) in dictionary_ids for t in masked)


@pytest.mark.parametrize(
    "flag, text, line, token, what",
    [
        ("align_dictionary", "{p} {c}\n\n{p} zzz\n", 3, "zzz", "is not a token of"),
        ("align_dictionary", "<mask> {c}\n", 1, "<mask>", "is a special symbol of"),
        ("align_heldout", "{p} {c}\n</s> {c}\n", 2, "</s>", "is a special symbol of"),
    ],
)
def test_a_bad_token_is_one_line_naming_file_and_line(
    derived, tmp_path, flag, text, line, token, what
):
    root, _, d, pairs = derived
    p, c = pairs[0]
    bad = tmp_path / "bad.txt"
    bad.write_text(text.format(p=p, c=c), encoding="utf-8")
    with pytest.raises(VecoUserError) as err:
        _align(root, d, **{flag: str(bad)})
    message = str(err.value)
    assert re.match(rf"^{re.escape(str(bad))}:{line}: '{re.escape(token)}' {what} the", message)
    assert "drop --align-dictionary-pieces" in message and "\n" not in message


def test_identical_and_repeated_token_pairs_are_dropped_and_counted_as_for_words(derived, tmp_path):
    _, _, d, pairs = derived
    (p, c), (q, r) = pairs[:2]
    path = tmp_path / "pairs.txt"
    path.write_text(f"{p} {c}\n{q} {q}\n{p} {c}\n{q} {r}\n", encoding="utf-8")
    resolved = load_token_pairs(str(path), d)
    assert list(resolved.pieces()) == [
        ((d.index(p),), (d.index(c),)),
        ((d.index(q),), (d.index(r),)),
    ]
    assert resolved.counts == {
        "read": 4,
        "usable": 2,
        "mean_of_pieces": 0,
        "identical": 1,
        "duplicate": 1,
    }
    assert resolved.source == str(path)
