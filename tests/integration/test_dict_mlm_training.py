"""fairseq-train --criterion dict_mlm on real monolingual text with a token dictionary, in
each --dict-mlm-mode."""

import math
import os

import pytest

from tests.helpers.runner import json_logs, monolingual, pretrain_args, run

UPDATES = 30
PAIRED = 400  # dictionary entries: ordinary tokens 2i <-> 2i+1 of DATA/dict.txt


@pytest.mark.parametrize("mode", ["code_switch", "synonym_target"])
def test_dict_mlm_trains_and_logs_its_loss_and_swap_rate(pretrain_data, tmp_path, mode):
    with open(os.path.join(pretrain_data, "dict.txt"), encoding="utf-8") as f:
        tokens = [line.split()[0] for line in f if not line.startswith("madeupword")]
    tokens = [t for t in tokens if t != "<mask>"][: 2 * PAIRED]
    pairs = tmp_path / "bilingual.txt"
    pairs.write_text("".join(f"{a} {b}\n" for a, b in zip(tokens[::2], tokens[1::2])))

    flags = ["--align-dictionary", pairs, "--align-dictionary-pieces", "--log-interval", "10"]
    flags += ["--dict-mlm-mode", mode]
    args = pretrain_args(pretrain_data, tmp_path / "ck", "dict_mlm", UPDATES, *flags)
    out = run("fairseq-train", monolingual(args)).stdout
    records = json_logs(out)
    assert len(records) == UPDATES // 10, out[-2000:]
    for record in records:
        assert math.isfinite(float(record["loss"])) and math.isfinite(
            float(record["mono_dict_loss"])
        )
        # swapped share of the selected translatable positions (inputs with code_switch,
        # targets with synonym_target): p = 0.5 (hundreds a record)
        assert 35.0 < float(record["dict_swap_rate"]) < 65.0, record
    assert "mono_mlm_loss" not in records[-1] and "bi_tlm_loss" not in records[-1]
    valid = json_logs(out, "valid")[-1]
    assert math.isfinite(float(valid["mono_dict_loss"])) and "dict_swap_rate" in valid, valid
    # it learns: measured (seed 1) 10.93 -> 9.50 bits from updates 1-10 to 21-30
    assert records[-1]["mono_dict_loss"] < records[0]["mono_dict_loss"] - 0.5, records
