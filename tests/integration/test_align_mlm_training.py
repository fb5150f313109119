"""fairseq-train --criterion align_mlm on real monolingual text with a real dictionary."""

from tests.helpers.runner import json_logs, monolingual, pretrain_args, run
from tests.helpers.scores import alignment_score
from tests.integration.conftest import ALIGNMENT_UPDATES
from veco_plugin.data.bilingual_dictionary import load_resolved


def test_align_mlm_aligns_embeddings_that_plain_mlm_does_not(
    aligned_data, word_lists, plain_mlm, tmp_path
):
    align = tmp_path / "align"
    flags = ["--align-dictionary", word_lists / "train.txt"]
    flags += ["--align-heldout", word_lists / "heldout.txt"]
    args = pretrain_args(aligned_data, align, "align_mlm", ALIGNMENT_UPDATES, *flags)
    out = run("fairseq-train", monolingual(args)).stdout
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

    aligned = alignment_score(aligned_data, align / "checkpoint_last.pt", word_lists)
    unaligned = alignment_score(aligned_data, plain_mlm, word_lists)
    print(
        f"alignment score after {ALIGNMENT_UPDATES} updates: align_mlm {aligned:.2f}%, "
        f"mlm {unaligned:.2f}%"
    )
    assert abs(aligned - valid["align_score"]) < 0.01  # logged rounded to 2 decimals
    assert aligned > unaligned + 5.0
