"""fairseq-train --criterion align_mlm on real monolingual text with a real dictionary."""

import os

import pytest

from tests.helpers.runner import json_logs, pretrain_args, run
from veco_plugin.checkpoints.trusted_load import load_trusted
from veco_plugin.corpora.subwords import load_sentencepiece
from veco_plugin.data.bilingual_dictionary import load_resolved, load_word_pairs
from veco_plugin.data.dictionary import load_dictionary_with_mask
from veco_plugin.evaluation.word_translation import accuracy, build_task, word_translation_hits

UPDATES = 150
EMBEDDINGS = "encoder.sentence_encoder.embed_tokens.weight"


@pytest.fixture(scope="module")
def word_lists(tmp_path_factory):
    """veco-gettext-dictionary's En-De train/held-out word lists."""
    if not os.path.isdir("/usr/share/locale/de/LC_MESSAGES"):
        pytest.skip("no German gettext catalogs")
    out = tmp_path_factory.mktemp("dictionary")
    run("veco-gettext-dictionary", ["--tgt-lang", "de", "--output", str(out)])
    return out


def _monolingual(args):
    """pretrain_args without the bilingual pairs: ALIGN-MLM needs monolingual text only."""
    i = args.index("--bi-pairs")
    return args[:i] + args[i + 2 :]


def _score(data, checkpoint, word_lists) -> float:
    """The alignment score of a checkpoint's input embeddings on the held-out words."""
    spm = load_sentencepiece(f"{data}/spm.model")
    d = load_dictionary_with_mask(f"{data}/dict.txt")
    train = load_word_pairs(str(word_lists / "train.txt"), spm, d)
    heldout = load_word_pairs(str(word_lists / "heldout.txt"), spm, d)
    table = load_trusted(checkpoint)["model"][EMBEDDINGS].float()
    return accuracy(*word_translation_hits(table, build_task(heldout, [train])))


def test_align_mlm_aligns_embeddings_that_plain_mlm_does_not(pretrain_data, word_lists, tmp_path):
    align = tmp_path / "align"
    flags = ["--align-dictionary", word_lists / "train.txt"]
    flags += ["--align-heldout", word_lists / "heldout.txt"]
    args = _monolingual(pretrain_args(pretrain_data, align, "align_mlm", UPDATES, *flags))
    out = run("fairseq-train", args).stdout
    records = json_logs(out)
    first, last = records[0], records[-1]
    # the auxiliary term falls (-L_ALIGN = mean cosine rises) while MLM learns
    assert last["align_cos"] > first["align_cos"] + 0.3, records
    assert last["mono_mlm_loss"] < first["mono_mlm_loss"] - 1.0, records
    assert "bi_tlm_loss" not in last
    valid = json_logs(out, "valid")[-1]
    assert "align_score" in valid
    # the resolved token-level list is saved with the checkpoints, and reloads
    assert len(load_resolved(str(align / "align_dictionary.tsv"))) > 1000

    plain = tmp_path / "mlm"
    baseline = ["--terms", "mono_mlm=1"]
    run(
        "fairseq-train",
        _monolingual(pretrain_args(pretrain_data, plain, "veco_terms", UPDATES, *baseline)),
    )
    aligned = _score(pretrain_data, align / "checkpoint_last.pt", word_lists)
    unaligned = _score(pretrain_data, plain / "checkpoint_last.pt", word_lists)
    print(
        f"alignment score after {UPDATES} updates: align_mlm {aligned:.2f}%, mlm {unaligned:.2f}%"
    )
    assert abs(aligned - valid["align_score"]) < 0.01  # logged rounded to 2 decimals
    assert aligned > unaligned + 5.0
