"""Start VECO from a fairseq RoBERTa checkpoint: cross-attention first, then everything."""

import torch
from fairseq import options, tasks

from tests.helpers.refusals import train_refused
from tests.helpers.runner import TINY, pretrain_args, roberta_checkpoint, run, train_cfg
from veco_plugin.checkpoints.trusted_load import load_trusted


def test_initialize_from_roberta_then_cross_attention_only_schedule(pretrain_data, tmp_path):
    xlmr = roberta_checkpoint(f"{pretrain_data}/mono/en", tmp_path / "roberta")
    save = tmp_path / "veco"
    out = run(
        "fairseq-train",
        pretrain_args(
            pretrain_data,
            save,
            "ca_mlm",
            8,
            "--pretrained-xlmr",
            xlmr,
            "--cross-attention-only-updates",
            "4",
            "--save-interval-updates",
            "4",
            "--disable-validation",
            *TINY,
        ),
    ).stdout
    assert "start random (cross-attention)" in out
    ref = load_trusted(xlmr)["model"]
    at4 = load_trusted(save / "checkpoint_1_4.pt")["model"]
    at8 = load_trusted(save / "checkpoint_1_8.pt")["model"]
    shared = [k for k in ref if k in at4]
    cross = [k for k in at4 if ".cross_attn" in k]
    assert len(shared) > 20 and len(cross) == 2 * 10  # 2 layers x (q,k,v,out w+b, LN w+b)
    for k in shared:  # frozen for the first 4 updates
        assert torch.equal(at4[k], ref[k]), k
    assert all(not torch.equal(at4[k], at8[k]) for k in cross)
    trained = [k for k in shared if k.endswith("fc1.weight")]
    assert all(not torch.equal(at8[k], ref[k]) for k in trained)


def test_dictionary_mismatch_with_checkpoint_is_one_line(pretrain_data, tmp_path):
    small = tmp_path / "small"
    small.mkdir()
    words = open(f"{pretrain_data}/dict.txt", encoding="utf-8").read().splitlines()[:300]
    (small / "dict.txt").write_text("\n".join(words) + "\n", encoding="utf-8")
    run(
        "fairseq-preprocess",
        [
            "--only-source",
            "--srcdict",
            small / "dict.txt",
            "--trainpref",
            f"{pretrain_data}/text/valid.spm.en",
            "--destdir",
            small,
        ],
    )
    xlmr = roberta_checkpoint(str(small), tmp_path / "roberta")
    line = train_refused(
        pretrain_args(
            pretrain_data, tmp_path / "veco", "ca_mlm", 2, "--pretrained-xlmr", xlmr, *TINY
        )
    )
    assert "--pretrained-xlmr" in line and "fairseq-preprocess --srcdict" in line


def _released_layout(state):
    """The layout of the released xlmr.base/xlmr.large ``model.pt`` (the inverse of
    fairseq's upgrade): ``decoder.*``, ``emb_layer_norm``, fused in-projections,
    and ``args`` (an argparse Namespace) instead of ``cfg``."""
    model = {}
    for key, value in state["model"].items():
        key = key.replace("encoder.", "decoder.", 1).replace(
            ".layernorm_embedding.", ".emb_layer_norm."
        )
        model[key] = value
    for key in [k for k in model if k.endswith("self_attn.q_proj.weight")]:
        prefix = key[: -len("q_proj.weight")]
        for kind in ("weight", "bias"):
            parts = [model.pop(f"{prefix}{p}_proj.{kind}") for p in "qkv"]
            model[f"{prefix}in_proj_{kind}"] = torch.cat(parts)
    args = options.parse_args_and_arch(
        options.get_training_parser(),
        ["DATA", "--task", "masked_lm", "--arch", "roberta", "--criterion", "masked_lm", *TINY],
    )
    released = {k: v for k, v in state.items() if k != "cfg"}
    released.update(args=args, model=model)
    return released


def test_released_xlmr_layouts_load_bit_exactly(pretrain_data, tmp_path):
    current = load_trusted(roberta_checkpoint(f"{pretrain_data}/mono/en", tmp_path / "roberta"))
    old = tmp_path / "xlmr_released.pt"
    torch.save(_released_layout(current), old)
    assert any(k.startswith("decoder.sentence_encoder.") for k in load_trusted(old)["model"])

    cfg = train_cfg(
        pretrain_args(
            pretrain_data, tmp_path / "veco", "ca_mlm", 1, "--pretrained-xlmr", old, *TINY
        )
    )
    model = tasks.setup_task(cfg.task).build_model(cfg.model)
    ours = model.state_dict()
    rows = len(open(f"{pretrain_data}/dict.txt", encoding="utf-8").read().splitlines())
    # XLM-R's conventions: <s> <pad> </s> <unk> + dict.txt + <mask>
    assert ours["encoder.sentence_encoder.embed_tokens.weight"].shape[0] == 4 + rows + 1
    reference = {k: v for k, v in current["model"].items() if not k.endswith("version")}
    assert len(reference) > 30
    for key, value in reference.items():
        assert torch.equal(ours[key], value), key
    assert set(ours) - set(reference) == {
        k for k in ours if ".cross_attn" in k or k.endswith("version")
    }
