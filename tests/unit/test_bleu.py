"""veco_plugin.evaluation.bleu: hypothesis reading, subword decoding, compound splitting
and both BLEU scores (the full path on real data: tests/integration/test_wmt14_scripts.py)."""

import json

import pytest

from veco_plugin.errors import VecoUserError
from veco_plugin.evaluation import bleu


def test_compound_splitting_convention():
    assert bleu.split_compounds("Pre-commit und Ende-zu-Ende") == (
        "Pre ##AT##-##AT## commit und Ende ##AT##-##AT## zu ##AT##-##AT## Ende"
    )
    # matches do not overlap (as with perl's s{(\S)-(\S)}{...}g): b is used up
    assert bleu.split_compounds("a-b-c -x") == "a ##AT##-##AT## b-c -x"
    assert bleu.moses_tokenized(["Das ist gut-gemacht."], "de") == [
        "Das ist gut ##AT##-##AT## gemacht ."
    ]
    # fastBPE hypotheses: joints removed, Moses-detokenized
    assert bleu.decode_subwords(["Das ist ein Te@@ st , oder ?"], None, "fastbpe", "de") == [
        "Das ist ein Test, oder?"
    ]


def _generate_log(path, hyps):
    with open(path, "w", encoding="utf-8") as f:
        for i, h in hyps:
            f.write(f"S-{i}\tsource {i}\nH-{i}\t-0.5\t{h}\nD-{i}\t-0.5\t{h}\nP-{i}\t-0.1\n")


def test_read_hypotheses_orders_by_id(tmp_path):
    log = tmp_path / "gen.txt"
    _generate_log(log, [(2, "c"), (0, "a b"), (1, "")])
    assert bleu.read_hypotheses(str(log), 3) == ["a b", "", "c"]


def test_read_hypotheses_counts_every_sentence(tmp_path):
    log = tmp_path / "gen.txt"
    _generate_log(log, [(0, "a"), (2, "c")])
    with pytest.raises(VecoUserError, match=r"wrote 2 hypotheses for 3 source.*missing ids: 1;"):
        bleu.read_hypotheses(str(log), 3)
    _generate_log(log, [(0, "a"), (0, "b")])
    with pytest.raises(VecoUserError, match="two hypotheses for sentence 0"):
        bleu.read_hypotheses(str(log), 1)


def test_unknown_subword_and_missing_model():
    with pytest.raises(VecoUserError, match="unknown --subword"):
        bleu.decode_subwords(["a"], None, "wordpiece", "de")
    with pytest.raises(VecoUserError, match="sentencepiece model /nope.model not found"):
        bleu.decode_subwords(["a"], "/nope.model", "sentencepiece", "de")


def test_bleu_scores_of_the_references_are_100():
    refs = ["Das ist ein gut-gemachter Test.", "Noch ein Satz, bitte!"]
    scores = bleu.bleu_scores(refs, refs, "de")
    assert scores["sacrebleu"]["score"] == pytest.approx(100.0)
    assert scores["tokenized_bleu"]["score"] == pytest.approx(100.0)
    assert "tok:13a" in scores["sacrebleu"]["signature"]
    assert "tok:none" in scores["tokenized_bleu"]["signature"]
    assert "##AT##" in scores["tokenized_bleu"]["tokenizer"]


def test_score_fastbpe_writes_hypotheses_and_json(tmp_path, capsys):
    refs = ["Das ist ein Test, oder?", "Guten Morgen."]
    (tmp_path / "ref.de").write_text("\n".join(refs) + "\n", encoding="utf-8")
    log = tmp_path / "gen.txt"
    _generate_log(log, [(1, "Guten Mor@@ gen ."), (0, "Das ist ein Te@@ st , oder ?")])
    cfg = bleu.ScoreConfig(
        generate_output=str(log),
        raw_ref=str(tmp_path / "ref.de"),
        tgt="de",
        hyp_out=str(tmp_path / "out" / "test.hyp.de"),
        subword="fastbpe",
        json=str(tmp_path / "scores.json"),
        checkpoint="averaged.pt",
    )
    result = bleu.score(cfg)
    assert (tmp_path / "out" / "test.hyp.de").read_text(encoding="utf-8").splitlines() == refs
    assert (tmp_path / "out" / "test.hyp.de.subword").read_text().splitlines()[0].endswith("?")
    saved = json.loads((tmp_path / "scores.json").read_text())
    assert saved == result and saved["checkpoint"] == "averaged.pt" and saved["sentences"] == 2
    out = capsys.readouterr().out
    assert "sacreBLEU (detokenized" in out and "tokenized BLEU (moses -l de" in out


def test_score_refuses_sources_and_references_of_different_length(tmp_path):
    (tmp_path / "ref.de").write_text("a\nb\n")
    (tmp_path / "src.en").write_text("a\n")
    cfg = bleu.ScoreConfig(
        generate_output=str(tmp_path / "gen.txt"),
        raw_ref=str(tmp_path / "ref.de"),
        raw_src=str(tmp_path / "src.en"),
        tgt="de",
        hyp_out=str(tmp_path / "hyp"),
    )
    with pytest.raises(VecoUserError, match="src.en has 1 lines but .*ref.de has 2"):
        bleu.score(cfg)


def test_missing_generate_output_is_a_user_error(tmp_path):
    with pytest.raises(VecoUserError, match="gen.out: no such fairseq-generate output"):
        bleu.read_hypotheses(str(tmp_path / "gen.out"), 1)
