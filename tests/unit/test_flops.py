"""benchmarks/flops.py's FLOP model against torch's FlopCounterMode on a counted step."""

import flops  # benchmarks/ is on pytest's pythonpath (pytest.ini)
import pytest
from fairseq.criterions import CRITERION_DATACLASS_REGISTRY, CRITERION_REGISTRY
from fairseq.criterions.masked_lm import MaskedLmConfig
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from tests.helpers.toy import ToyTask, build, diagonal_links, pair_batch, toy_dictionary
from veco_plugin.data.bilingual_dictionary import ResolvedDictionary, save_resolved
from veco_plugin.objectives import benchmark_variants, build_criterion

TINY = dict(
    encoder_layers=2, encoder_embed_dim=64, encoder_ffn_embed_dim=256, encoder_attention_heads=4
)  # veco_tiny's sizes, for fairseq's roberta too


def counted(step) -> int:
    """FLOPs of ``step()`` as FlopCounterMode counts them, with SDPA's math kernel
    (its matrix products are what the counter sees on CPU: the CPU flash kernel has
    no formula)."""
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        step()
    return counter.get_total_flops()


def criterion(name, d, tmp_path):
    """A benchmark variant's criterion (toy word list for align_mlm)."""
    pieces = [((5,), (6,)), ((7,), (8, 9)), ((10, 11), (12,))]
    words = [(f"s{i}", f"t{i}") for i in range(len(pieces))]
    for split in ("train", "heldout"):
        resolved = ResolvedDictionary.from_pieces(words, pieces, d.pad())
        save_resolved(resolved, f"{tmp_path}/{split}.txt")
    crit, settings = benchmark_variants(word_list=str(tmp_path))[name]
    if "save_dir" in CRITERION_DATACLASS_REGISTRY[crit].__dataclass_fields__:
        settings = {**settings, "save_dir": str(tmp_path / "ck")}
    return build_criterion(crit, ToyTask(d), **settings)


@pytest.mark.parametrize("name", flops.OBJECTIVES)
def test_step_flops_within_5_percent_of_the_counter(name, tmp_path):
    d = toy_dictionary()
    bi = pair_batch(d, n_pairs=6, seed=1)
    bi["links"] = diagonal_links(bi)
    sample = {"mono": pair_batch(d, n_pairs=6, seed=0), "bi": bi}
    if name == "masked_lm":  # fairseq's own, every x and y its own sequence
        model = build("roberta", d, **TINY)
        mlm = CRITERION_REGISTRY["masked_lm"](MaskedLmConfig(tpu=False), ToyTask(d))

        def loss():
            return sum(
                mlm(model, {"net_input": {"src_tokens": b["pair_tokens"]},
                            "target": b["pair_target"], "ntokens": 1, "nsentences": 1})[0]
                for b in sample.values()
            )  # fmt: skip

    else:
        model = build("veco_tiny", d)
        crit = criterion(name, d, tmp_path)
        crit.extend_model(model)

        def loss():
            return crit(model, sample)[0]

    model.train()
    got = counted(lambda: loss().backward())
    size = flops.ModelSize(layers=2, dim=64, ffn=256, vocab=len(d))
    shapes = {k: flops.sub_batch(b, d.pad()) for k, b in sample.items()}
    want = flops.step_flops(name, size, shapes)["total"]
    assert abs(want - got) <= 0.05 * got, (want, got, want / got)


def test_peak_of_the_first_device_fragment_in_the_name():
    assert flops.peak_flops("NVIDIA H100 80GB HBM3", "bf16") == 989e12
    assert flops.peak_flops("NVIDIA H100 PCIe", "fp16") == 756e12
    assert flops.peak_flops("NVIDIA L40S", "bf16") == 362e12  # not the L4's 121
    assert flops.peak_flops("NVIDIA L4", "bf16") == 121e12
    assert flops.peak_flops("NVIDIA A100-SXM4-80GB", "fp32") == 19.5e12
    assert flops.peak_flops("Tesla V100-SXM2-32GB", "bf16") is None  # no bf16 on Volta
    assert flops.mfu(989e12, 2.0, "NVIDIA H100 80GB HBM3", "bf16") == 0.5
    assert flops.mfu(1e12, 1.0, "cpu", "fp32") is None
