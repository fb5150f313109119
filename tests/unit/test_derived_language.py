"""ALIGN-MLM's derived languages (``veco_plugin.corpora.derived``), exactly, on real English:
the system's gettext catalogs (English msgids) and the UD English excerpts of
tests/fixtures/udpos, cut by a sentencepiece model trained here on those msgids."""

import glob
from pathlib import Path

import pytest
from fairseq.data import Dictionary

from veco_plugin.corpora import derived as d
from veco_plugin.corpora.gettext import read_catalog
from veco_plugin.corpora.subwords import load_sentencepiece, train_sentencepiece
from veco_plugin.corpora.syntax import read_trees, syntax_order
from veco_plugin.corpora.syntax_order import OrderModel
from veco_plugin.corpora.tagging import TaggedSentence, read_tagged
from veco_plugin.corpora.tagging_data import encode_windows
from veco_plugin.errors import VecoUserError

FIX = "tests/fixtures/udpos"
TAGGED = [f"{FIX}/en_ewt-ud-dev.excerpt.conllu", f"{FIX}/dev-en.excerpt.tsv"]
CATALOGS = sorted(glob.glob("/usr/share/locale/de/LC_MESSAGES/*.mo"))[:12]
needs_catalogs = pytest.mark.skipif(not CATALOGS, reason="no /usr/share/locale/de/*.mo here")


@pytest.fixture(scope="module")
def english():
    """English msgids, one a line (whitespace collapsed), at most 2000."""
    lines = [" ".join(m.split()) for p in CATALOGS for m, _ in read_catalog(Path(p))]
    return [x for x in lines if x][:2000]


@pytest.fixture(scope="module")
def sp(english, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("spm")
    words = [w for s in read_tagged(TAGGED) for w in s.words]
    (tmp / "text.txt").write_text("\n".join(english + words) + "\n", encoding="utf-8")
    return load_sentencepiece(train_sentencepiece([str(tmp / "text.txt")], str(tmp / "m"), 400))


@pytest.fixture(scope="module")
def sentences():
    return read_tagged(TAGGED)


def _pieces(sp, words):
    return sp.encode(list(words), out_type=str)


# ------------------------------------------------------------------------------ T_inv


def test_inversion_keeps_sentence_ends_and_reverses_the_words_before_them():
    words = "a b c . d e ? f g".split()
    assert d.invert_words(words) == "c b a . e d ? g f".split()
    assert d.invert_words("no end here".split()) == "here end no".split()
    assert d.invert_words(["."]) == ["."] and d.invert_words([]) == []
    assert d.invert_words("x . . y !".split()) == "x . . y !".split()


def test_tagged_inversion_is_the_authors_pos_rule():
    """invert_pos_data.py: only a final . ? ! stays, everything else reversed."""
    tagged = TaggedSentence(tuple("a b . c d ?".split()), tuple("1 2 3 4 5 6".split()), "x")
    assert d.invert_tagged(tagged).words == tuple("d c . b a ?".split())
    assert d.invert_tagged(tagged).tags == tuple("5 4 3 2 1 6".split())
    assert d.pos_inversion_order("a b c".split()) == [2, 1, 0]
    assert d.pos_inversion_order(["!"]) == [0] and d.pos_inversion_order([]) == []


@needs_catalogs
def test_inversion_twice_is_the_identity_on_words_and_tags(english, sentences):
    for line in english:
        words = line.split()
        assert d.invert_words(d.invert_words(words)) == words
        order = d.inversion_order(words)
        assert sorted(order) == list(range(len(words)))
        assert all(words[i] == w for i, w in enumerate(d.invert_words(words)) if w == ".")
    for s in sentences:
        assert d.invert_tagged(d.invert_tagged(s)) == s
    assert sum(d.invert_tagged(s) != s for s in sentences) > 0.9 * len(sentences)


# ---------------------------------------------------------------------------- T_trans


def test_trans_is_a_bijection_on_the_non_special_vocabulary(sp):
    vocabulary = d.spm_vocabulary(sp, "m.model")
    copies = d.transliterate(vocabulary)
    assert len(set(copies)) == len(vocabulary) == sp.get_piece_size() - 1  # all but <unk>
    assert not set(copies) & set(vocabulary)
    assert all(d.is_copy(c) and not d.is_copy(p) for p, c in zip(vocabulary, copies))
    assert d.untransliterate(copies) == vocabulary
    specials = sorted(d.spm_specials(sp))
    assert d.transliterate(specials, d.spm_specials(sp)) == specials
    assert d.untransliterate(specials) == specials


@needs_catalogs
@pytest.mark.parametrize("transform", [d.TRANS, d.INV, d.TRANS_INV])
def test_text_of_each_transformation_is_inversion_then_segmentation_then_copies(
    sp, english, transform
):
    invert, copy = d.TRANSFORMS[transform][0] == d.INV, d.TRANSFORMS[transform][1]
    for line in english:
        words = line.split()
        pieces = _pieces(sp, words)
        eng, der = d.derive_line(words, pieces, transform)
        assert eng == sp.encode(line, out_type=str)  # word by word = the whole line
        moved = d.invert_words(words) if invert else words
        expected = sp.encode(" ".join(moved), out_type=str)
        assert (d.untransliterate(der) if copy else der) == expected
        assert all(d.is_copy(p) for p in der) == copy and len(der) == len(eng)


# ---------------------------------------------------------------- labels follow words


def _assert_moved(out, s, pieces, order, copy):
    """Word i of ``out`` is word ``order[i]`` of ``s`` (its copies with ``copy``), its tag
    with it."""
    for i, j in enumerate(order):
        assert out.tags[i] == s.tags[j]
        if copy:
            assert d.derived_word_pieces(out.words[i]) == d.transliterate(pieces[j])
        else:
            assert out.words[i] == s.words[j]


@pytest.mark.parametrize("transform", [d.TRANS, d.INV, d.TRANS_INV])
def test_labels_follow_their_words(sp, sentences, transform):
    invert, copy = d.TRANSFORMS[transform][0] == d.INV, d.TRANSFORMS[transform][1]
    for s in sentences:
        pieces = _pieces(sp, s.words)
        out = d.derive_tagged(s, pieces, transform)
        order = d.pos_inversion_order(s.words) if invert else list(range(len(s.words)))
        assert len(out.words) == len(out.tags) == len(s.words) and out.where == s.where
        _assert_moved(out, s, pieces, order, copy)
        if not copy:
            assert sorted(zip(out.words, out.tags)) == sorted(zip(s.words, s.tags))


@pytest.mark.parametrize("transform", [d.TRANS, d.TRANS_INV])
def test_tagging_pipeline_cuts_a_derived_word_into_exactly_its_copies(sp, sentences, transform):
    english = [d.invert_tagged(s) if transform == d.TRANS_INV else s for s in sentences]
    ours = [d.derive_tagged(s, _pieces(sp, s.words), transform) for s in sentences]
    for e, o in zip(encode_windows(sp, english, 24), encode_windows(sp, ours, 24)):
        assert o.pieces == tuple(d.transliterate(e.pieces))
        assert (o.tags, o.starts, o.sentence, o.first_word) == (
            e.tags,
            e.starts,
            e.sentence,
            e.first_word,
        )


# ---------------------------------------------------------------------------- T_syn

CONLLU = f"{FIX}/en_ewt-ud-dev.excerpt.conllu"
# any weights make a model to compose with: adjectives after nouns, objects before verbs
TOY_SYN = OrderModel({"Nuamod|ADJ<": -3.0, "Vrobj<@": 3.0, "Vr@<obj": -3.0})


@pytest.mark.parametrize("transform", [d.SYN, d.TRANS_SYN])
def test_syn_moves_tags_with_words_and_composes_with_the_copies(sp, transform):
    """T_syn then segmentation then the copies, as for T_inv: tags travel with their
    words; a derived word is exactly its English word's copies; lines likewise."""
    copy = d.TRANSFORMS[transform][1]
    trees = read_trees(CONLLU)
    for tree, s in zip(trees, read_tagged([CONLLU])):
        order = syntax_order(tree, TOY_SYN, seed=1)
        assert sorted(order) == list(range(len(s.words)))
        pieces = _pieces(sp, s.words)
        out = d.derive_tagged(s, pieces, transform, order)
        _assert_moved(out, s, pieces, order, copy)
        eng, der = d.derive_line(s.words, pieces, transform, order)
        moved = [p for j in order for p in pieces[j]]
        assert (d.untransliterate(der) if copy else der) == moved and len(eng) == len(der)
    with pytest.raises(ValueError):
        d.derive_line(s.words, pieces, transform)  # T_syn needs the tree's order


def test_syn_text_and_tags_from_one_tree_come_out_alike(sp):
    """A POS sentence that is also pre-training text gets one order in both."""
    k, tree = max(enumerate(read_trees(CONLLU)), key=lambda x: len(x[1].words))
    order = syntax_order(tree, TOY_SYN, seed=1)
    assert order == syntax_order(tree, TOY_SYN, seed=1) != list(range(len(tree.words)))
    windows = encode_windows(
        sp,
        [d.derive_tagged(read_tagged([CONLLU])[k], _pieces(sp, tree.words), d.TRANS_SYN, order)],
        64,
    )
    english = TaggedSentence(
        tuple(tree.words[i] for i in order), tuple(tree.tags[i] for i in order), "x"
    )
    assert windows[0].pieces == tuple(d.transliterate(encode_windows(sp, [english], 64)[0].pieces))


def test_segment_words_mixes_english_and_derived_words_in_order(sp):
    words = ["running", d.derived_word(["▁go", "es"]), "home", d.derived_word([])]
    got = d.segment_words(sp, words)
    assert [got[0], got[2]] == sp.encode(["running", "home"], out_type=str)
    assert got[1] == ["\ue000▁go", "\ue000es"] and got[3] == []


# ----------------------------------------------------------------------- dictionaries


def _rows(sp):
    vocabulary = d.spm_vocabulary(sp, "m.model")
    return [d.DictRow(p, str(len(vocabulary) - i)) for i, p in enumerate(vocabulary)]


def test_joint_dictionary_is_the_english_rows_and_their_copies(sp, tmp_path):
    specials = d.spm_specials(sp)
    rows = _rows(sp) + [d.DictRow("<mask>", "1"), d.DictRow("madeupword0000", "0")]
    rows.append(d.DictRow("<unk>", "5", d.OVERWRITE))
    joint = d.joint_dictionary(rows, specials)
    n = len(rows) - 3
    assert joint[: len(rows)] == rows and len(joint) == len(rows) + n
    for row, copy in zip(rows[:n], joint[len(rows) :]):
        assert copy == d.DictRow(d.copy_piece(row.token), row.count)
    path = tmp_path / "dict.txt"
    path.write_text("".join(r.line() + "\n" for r in joint), encoding="utf-8")
    loaded = Dictionary.load(str(path))
    assert len(loaded) == loaded.nspecial + len(joint)  # fairseq appends an overwrite row
    assert all(loaded.index(d.MARKER + r.token) != loaded.unk() for r in rows[:n])


def test_dictionary_has_the_stated_coverage_and_is_reproducible(sp):
    specials = d.spm_specials(sp)
    rows = _rows(sp) + [d.DictRow("<mask>", "1")]
    types = d.dictionary_types(rows, specials)
    assert len(types) == len(rows) - 1 and "<mask>" not in types
    for coverage in (0.25, 0.5, 1.0, 0.013):
        pairs = d.bilingual_dictionary(types, coverage, seed=3)
        assert len(pairs) == round(coverage * len(types))
        assert len({s for s, _ in pairs}) == len(pairs)
        assert all(s in types and s not in specials and t == d.copy_piece(s) for s, t in pairs)
        assert pairs == d.bilingual_dictionary(types, coverage, seed=3)
    assert d.bilingual_dictionary(types, 0.25, 3) != d.bilingual_dictionary(types, 0.25, 4)
    text = d.format_pairs(d.bilingual_dictionary(types, 0.25, 3))
    assert all(len(line.split()) == 2 for line in text.splitlines())


@pytest.mark.parametrize("coverage", [0.0, -0.1, 1.5, 0.0001])
def test_a_coverage_without_entries_or_outside_the_unit_interval_is_refused(coverage):
    with pytest.raises(VecoUserError, match="--dictionary-coverage"):
        d.bilingual_dictionary(["▁a", "▁b", "c"], coverage)


def test_a_dictionary_naming_unknown_tokens_is_refused_with_its_line(sp):
    vocabulary = set(d.spm_vocabulary(sp, "m.model"))
    lines = ["▁the 10", "<mask> 1", "▁nonexistentpiece 3"]
    with pytest.raises(VecoUserError, match=r"^dict.txt:3: token '▁nonexistentpiece' is not"):
        d.parse_dictionary(lines, "dict.txt", vocabulary, d.spm_specials(sp))
    with pytest.raises(VecoUserError, match=r"^dict.txt:2: .* already a joint dictionary"):
        d.parse_dictionary(["▁the 1", "\ue000▁the 1"], "dict.txt", vocabulary, frozenset())


def test_a_sentence_without_words_or_with_the_marker_is_refused():
    with pytest.raises(VecoUserError, match=r"^a.txt:4: a sentence without words"):
        d.check_words([], "a.txt:4")
    with pytest.raises(VecoUserError, match=r"^a.txt:5: word 2 .* holds U\+E000"):
        d.check_words(["ok", "x\ue000y"], "a.txt:5")
    d.check_words(TaggedSentence(("a",), ("X",), "").words, "a.txt:6")
