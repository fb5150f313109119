"""fairseq-train --criterion weam on real text with eflomal word alignments, and a
combination no paper trains (WEAM + ALIGN-MLM + MLM) through --criterion veco_terms."""

import pytest

from tests.helpers.runner import json_logs, pretrain_args, run
from tests.helpers.scores import alignment_score
from tests.integration.conftest import ALIGNMENT_UPDATES

# Measured, seeds 1-3 on one eflomal alignment of the data (deterministic per seed: the
# runner pins one thread), first train_inner record (updates 1-25) against the last:
#   weam: bi_tlm / bi_cp / mono_mlm losses fall 1.67-1.84 bits, bi_cp_acc rises 2.49 4.22
#   2.85 points; alignment score minus plain MLM's +1.41 -0.40 +0.20 points
#   veco_terms combination, COMBINATION_UPDATES (75): losses fall 1.33-1.60 bits (per term,
#   seeds 1-3: mono_mlm 1.461 1.441 1.481, bi_tlm 1.333 1.411 1.506, bi_cp 1.358 1.392
#   1.596), align_cos rises 0.332 0.323 0.326 (150 updates: 1.63-1.90 bits; 0.348 0.338 0.341)
MIN_DROP_BITS = 1.0  # 0.6 below the smallest at 150 updates, 0.33 at 75
MIN_CP_ACC_GAIN = 1.0  # 1.5 below the smallest
MIN_COS_GAIN = 0.2  # 0.12 below the smallest at 75 updates
MAX_SCORE_LOSS = 3.0  # 2.6 below the smallest
# the combination's run: its checks read only its own training log (3 records of 25)
COMBINATION_UPDATES = 75


@pytest.fixture(scope="module")
def weam_run(aligned_data, tmp_path_factory):
    """ALIGNMENT_UPDATES weam updates at the paper's 30% masking: (save dir, records)."""
    save = tmp_path_factory.mktemp("weam")
    args = pretrain_args(aligned_data, save, "weam", ALIGNMENT_UPDATES, "--bi-mask-prob", "0.3")
    out = run("fairseq-train", args).stdout
    assert "bi_cp_loss" in json_logs(out, "valid")[-1]
    return save, json_logs(out)


def _falls(records, term, bits):
    first, last = records[0][f"{term}_loss"], records[-1][f"{term}_loss"]
    assert last < first - bits, (term, first, last)


def test_weam_learns_cross_lingual_prediction(weam_run):
    _, records = weam_run
    for term in ("bi_tlm", "bi_cp", "mono_mlm"):
        _falls(records, term, MIN_DROP_BITS)
    assert records[-1]["bi_cp_acc"] > records[0]["bi_cp_acc"] + MIN_CP_ACC_GAIN, records


def test_weam_keeps_the_embeddings_as_aligned_as_plain_mlm(
    weam_run, aligned_data, plain_mlm, word_lists
):
    """The issue expects WEAM above plain MLM; measured on veco_tiny it is level with it
    (150 updates: 21.6% and 22.0% in two runs vs 21.8%; 500: 19.8% vs 20.8% for
    MLM+TLM): L_cp trains the transforms of eqs. 6-7 and the partners' contextual states,
    the input embeddings only through the tied output layer. eflomal's sampling is not
    seeded, so runs differ by a query or two (of 330): this checks WEAM costs no more."""
    save, _ = weam_run
    exchanged = alignment_score(aligned_data, save / "checkpoint_last.pt", word_lists)
    plain = alignment_score(aligned_data, plain_mlm, word_lists)
    print(
        f"alignment score after {ALIGNMENT_UPDATES} updates: weam {exchanged:.2f}%, "
        f"mlm {plain:.2f}%"
    )
    assert exchanged > plain - MAX_SCORE_LOSS


def test_a_combination_no_paper_trains(aligned_data, word_lists, tmp_path):
    terms = "mono_mlm=1,bi_tlm=1,bi_cp=1,align=10"
    flags = ["--terms", terms, "--align-dictionary", word_lists / "train.txt"]
    args = pretrain_args(aligned_data, tmp_path / "ck", "veco_terms", COMBINATION_UPDATES, *flags)
    records = json_logs(run("fairseq-train", args).stdout)
    for term in ("mono_mlm", "bi_tlm", "bi_cp"):
        _falls(records, term, MIN_DROP_BITS)
    assert records[-1]["align_cos"] > records[0]["align_cos"] + MIN_COS_GAIN, records
