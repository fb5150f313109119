"""veco_plugin.corpora.subwords: sentencepiece training and encoding of files, the fairseq
dictionary of a model and the --max-positions check."""

import pytest

from veco_plugin.corpora import subwords
from veco_plugin.errors import VecoUserError

WORDS = "the quick brown fox jumps over a lazy dog while seven wizards quietly hex bad jokes"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("spm")
    words = WORDS.split()
    lines = [" ".join(words[i % 7 :] + words[: i % 5]) for i in range(200)]
    path = root / "train.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root, path


@pytest.fixture(scope="module")
def model(corpus):
    root, path = corpus
    # the same input listed twice is read once (inputs are deduplicated and sorted)
    return subwords.train_sentencepiece([str(path), str(path)], str(root / "spm"), 35)


def test_train_returns_the_model_with_the_stage_options(model):
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2 as pb

    assert model.endswith("spm.model")
    proto = pb.ModelProto()
    with open(model, "rb") as f:
        proto.ParseFromString(f.read())
    spec = proto.trainer_spec
    assert spec.vocab_size == 35 and spec.model_type == pb.TrainerSpec.UNIGRAM
    assert (spec.bos_id, spec.eos_id, spec.pad_id, spec.unk_id) == (-1, -1, -1, 0)
    assert spec.character_coverage == 1.0 and list(spec.input) == [spec.input[0]]
    assert spm.SentencePieceProcessor(model_file=model).get_piece_size() == 35


def test_vocabulary_too_large_names_the_bound(corpus):
    root, path = corpus
    with pytest.raises(VecoUserError, match=r"--vocab-size 5000: the text supports at most \d+"):
        subwords.train_sentencepiece([str(path)], str(root / "big"), 5000)


def test_encode_files_matches_line_by_line_encoding(model, tmp_path):
    import sentencepiece as spm

    src = tmp_path / "in.txt"
    src.write_bytes("the  lazy\tfox\rjumps\n\nseven wizards\n".encode("utf-8"))
    dst = tmp_path / "out.txt"
    subwords.encode_files(model, [(str(src), str(dst))], workers=2)
    sp = spm.SentencePieceProcessor(model_file=model)
    expected = [
        " ".join(sp.encode(" ".join(line.split()), out_type=str))
        for line in src.read_bytes().decode("utf-8").split("\n")[:-1]
    ]
    assert dst.read_text(encoding="utf-8").split("\n")[:-1] == expected
    assert len(expected) == 3 and expected[1] == ""
    assert not list(tmp_path.glob("*.part"))


def test_encode_files_refuses_bad_utf8_and_missing_model(model, tmp_path):
    src = tmp_path / "bad.txt"
    src.write_bytes(b"ok\n\xe9\n")
    with pytest.raises(VecoUserError, match="bad.txt line 2: not valid UTF-8"):
        subwords.encode_files(model, [(str(src), str(tmp_path / "o"))])
    with pytest.raises(VecoUserError, match="sentencepiece model /nope.model not found"):
        subwords.encode_files("/nope.model", [])


def test_write_dictionary_skips_unk_and_control(model, tmp_path):
    import sentencepiece as spm

    path = tmp_path / "dict.txt"
    subwords.write_dictionary(model, str(path))
    sp = spm.SentencePieceProcessor(model_file=model)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == sp.get_piece_size() - 1  # <unk> only: no <s>, </s>, <pad>
    assert lines[0] == f"{sp.id_to_piece(1)} 1" and all(ln.endswith(" 1") for ln in lines)


def test_check_max_positions(tmp_path):
    path = tmp_path / "valid.spm.en"
    path.write_text("a b c\na b c d e\n")
    subwords.check_max_positions([str(path)], 7)
    with pytest.raises(VecoUserError) as err:
        subwords.check_max_positions([str(path)], 6)
    assert str(err.value) == (
        f"{path}: a sentence of 5 pieces (+ <s>, </s>) exceeds --max-positions 6; "
        "raise --max-positions (or --vocab-size)"
    )
    subwords.check_max_positions([str(path)], 6, extra=1)
    (tmp_path / "empty").write_text("")
    subwords.check_max_positions([str(tmp_path / "empty")], 2)


def test_spm_encode_names_its_own_flag_for_a_missing_model(tmp_path, capsys):
    from veco_plugin.cli import spm

    with pytest.raises(SystemExit):
        spm.cli_main(["encode", "--model", str(tmp_path / "no.model"), "a", "b"])
    assert "not found (--model)" in capsys.readouterr().err
