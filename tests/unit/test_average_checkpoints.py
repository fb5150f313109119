"""veco-average-checkpoints on real checkpoints of a tiny stock fairseq Transformer.

The module fixture runs ``fairseq-train`` twice (warm, tests/helpers/runner.py) on 40
lines of toy text: ``--arch transformer`` saving every 2 updates (5 updates per epoch,
10 updates), and ``--arch transformer_iwslt_de_en`` with other FFN sizes.
"""

import logging
import os
import random

import pytest
import torch

from tests.helpers.runner import run
from veco_plugin.checkpoints import averaging
from veco_plugin.checkpoints.trusted_load import load_trusted
from veco_plugin.cli import average_checkpoints as avg

PLUGIN = os.path.abspath(
    os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "veco_plugin")
)

TINY = [
    "--encoder-layers", "1", "--decoder-layers", "1",
    "--encoder-embed-dim", "16", "--decoder-embed-dim", "16",
    "--encoder-attention-heads", "2", "--decoder-attention-heads", "2",
]  # fmt: skip


def _train(data, save_dir, arch, ffn):
    run(
        "fairseq-train",
        [
            data, "--user-dir", PLUGIN,
            "--arch", arch, *TINY,
            "--encoder-ffn-embed-dim", str(ffn), "--decoder-ffn-embed-dim", str(ffn),
            "--optimizer", "adam", "--lr", "1e-3", "--batch-size", "8",
            "--required-batch-size-multiple", "1", "--max-update", "10",
            "--save-interval-updates", "2", "--save-dir", save_dir, "--cpu",
            "--seed", "1", "--num-workers", "0", "--log-format", "none",
        ]  # fmt: skip
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("avg")
    rng = random.Random(0)
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda".split()
    with open(root / "train.src", "w") as src, open(root / "train.tgt", "w") as tgt:
        for _ in range(40):
            sent = [rng.choice(words) for _ in range(rng.randint(3, 8))]
            src.write(" ".join(sent) + "\n")
            tgt.write(" ".join(reversed(sent)) + "\n")
    data = str(root / "bin")
    run(
        "fairseq-preprocess",
        [
            "--source-lang", "src",
            "--target-lang", "tgt", "--trainpref", str(root / "train"),
            "--validpref", str(root / "train"), "--destdir", data,
            "--joined-dictionary", "--workers", "1",
        ]  # fmt: skip
    )
    base, other = str(root / "base"), str(root / "other")
    _train(data, base, "transformer", 32)
    _train(data, other, "transformer_iwslt_de_en", 24)
    return {"root": root, "data": data, "base": base, "other": other}


def _args(*argv):
    return avg.get_parser().parse_args(list(argv))


def test_update_checkpoints_are_the_expected_files(runs):
    names = sorted(os.listdir(runs["base"]))
    assert {"checkpoint_1_2.pt", "checkpoint_1_4.pt", "checkpoint_2_6.pt"} <= set(names)
    assert {"checkpoint_2_8.pt", "checkpoint1.pt", "checkpoint2.pt"} <= set(names)


def test_average_is_exact_mean_of_last_update_checkpoints(runs, tmp_path):
    out = tmp_path / "avg.pt"
    avg.main(
        _args(
            "--inputs",
            runs["base"],
            "--num-update-checkpoints",
            "3",
            "--output",
            str(out),
        )
    )
    picked = ["checkpoint_1_4.pt", "checkpoint_2_6.pt", "checkpoint_2_8.pt"]
    inputs = [load_trusted(os.path.join(runs["base"], n)) for n in picked]
    result = load_trusted(str(out))
    assert not os.path.exists(str(out) + ".tmp")

    float_params = 0
    for name, tensor in result["model"].items():
        stacked = torch.stack([s["model"][name] for s in inputs])
        assert tensor.dtype == stacked.dtype, name
        if torch.is_floating_point(tensor):
            float_params += 1
            exact = (stacked.double().sum(0) / len(inputs)).to(tensor.dtype)
            assert torch.equal(tensor, exact), name
        else:
            assert torch.equal(tensor, inputs[-1]["model"][name]), name
    assert float_params > 10
    # the inputs really differ, so this is not a trivial pass
    key = "encoder.layers.0.fc1.weight"
    assert not torch.equal(inputs[0]["model"][key], inputs[-1]["model"][key])

    # everything besides the model comes from the newest input (8 updates)
    assert result["optimizer_history"][-1]["num_updates"] == 8
    assert result["cfg"]["model"].arch == "transformer"


def test_output_loads_like_a_training_checkpoint(runs, tmp_path):
    from fairseq import checkpoint_utils

    out = str(tmp_path / "avg.pt")
    avg.main(
        _args(
            "--inputs",
            runs["base"],
            "--num-epoch-checkpoints",
            "2",
            "--output",
            out,
            "--no-optimizer-state",
        )
    )
    state = load_trusted(out)
    assert "last_optimizer_state" not in state
    models, cfg, task = checkpoint_utils.load_model_ensemble_and_task(
        [out], arg_overrides={"data": runs["data"]}
    )
    expected = (
        load_trusted(os.path.join(runs["base"], "checkpoint1.pt"))["model"],
        load_trusted(os.path.join(runs["base"], "checkpoint2.pt"))["model"],
    )
    loaded = models[0].state_dict()["decoder.output_projection.weight"]
    mean = (
        expected[0]["decoder.output_projection.weight"].double()
        + expected[1]["decoder.output_projection.weight"].double()
    ) / 2
    assert torch.equal(loaded, mean.float())


def test_upper_bound_and_explicit_files(runs):
    picked = averaging.select_checkpoints(runs["base"], 2, "update", upper_bound=5)
    assert [os.path.basename(p) for p in picked] == [
        "checkpoint_1_2.pt",
        "checkpoint_1_4.pt",
    ]
    files = [os.path.join(runs["base"], n) for n in ("checkpoint1.pt", "checkpoint2.pt")]
    assert avg.resolve_inputs(_args("--inputs", *files, "--output", "x")) == files


def test_fewer_checkpoints_than_asked_warns_with_count(runs, tmp_path, caplog):
    out = tmp_path / "avg.pt"
    with caplog.at_level(logging.WARNING, logger=avg.logger.name):
        avg.main(
            _args(
                "--inputs",
                runs["base"],
                "--num-update-checkpoints",
                "10",
                "--output",
                str(out),
            )
        )
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "asked for 10 update checkpoints but found only 4" in warnings[0]
    result = load_trusted(str(out))
    four = [
        load_trusted(os.path.join(runs["base"], n))
        for n in sorted(os.listdir(runs["base"]))
        if averaging._UPDATE_CKPT.match(n)
    ]
    key = "decoder.layers.0.fc2.weight"
    exact = (torch.stack([s["model"][key] for s in four]).double().mean(0)).float()
    assert torch.equal(result["model"][key], exact)


def test_different_archs_are_refused_with_one_line_naming_files(runs, tmp_path):
    a = os.path.join(runs["base"], "checkpoint_2_8.pt")
    b = os.path.join(runs["other"], "checkpoint_2_8.pt")
    out = tmp_path / "avg.pt"
    proc = run("veco-average-checkpoints", ["--inputs", a, b, "--output", out], check=False)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("veco-average-checkpoints: error: ")
    assert a in last and b in last
    assert "'transformer'" in last and "'transformer_iwslt_de_en'" in last
    assert "Traceback" not in proc.stderr
    assert not out.exists()


def test_different_shapes_are_refused(runs):
    a = os.path.join(runs["base"], "checkpoint_2_6.pt")
    b = os.path.join(runs["base"], "checkpoint_2_8.pt")
    states = [load_trusted(a), load_trusted(b)]
    # same arch name, but one tensor narrowed (as a run with another size would have)
    w = states[1]["model"]["encoder.layers.0.fc1.weight"]
    states[1]["model"]["encoder.layers.0.fc1.weight"] = w[:-1]
    with pytest.raises(averaging.AverageError, match="encoder.layers.0.fc1.weight") as err:
        averaging.average_states(states, [a, b])
    assert a in str(err.value) and b in str(err.value)
    del states[1]["model"]["encoder.layers.0.fc1.weight"]
    with pytest.raises(averaging.AverageError, match="different parameters"):
        averaging.average_states(states, [a, b])


def test_directory_without_count_is_an_error(runs):
    with pytest.raises(averaging.AverageError, match="is a directory"):
        avg.resolve_inputs(_args("--inputs", runs["base"], "--output", "x"))
    with pytest.raises(averaging.AverageError, match="no update checkpoints"):
        averaging.select_checkpoints(str(runs["root"]), 3, "update")
