"""One rank of the data-parallel gradient checks (run by test_data_parallel.py).

Usage: python -m tests.helpers.ddp_worker RANK WORLD PORT OUT BACKEND:CRITERION ...

For each case, in one process group (one start-up of torch and fairseq for them all):
builds the same toy ``veco_tiny`` on every rank, wraps it as fairseq does for
``BACKEND``, runs the criterion on this rank's share of the pairs, backpropagates,
lets the wrapper synchronize and saves the gradients to OUT/BACKEND-CRITERION/rankRANK.pt.
Rank -1 is the one-process reference on the union of every rank's pairs (no wrapper).
OUT/words.tsv is the word list of align_mlm and dict_mlm.
"""

import os
import sys

import torch
import torch.distributed as dist
from fairseq.dataclass.configs import DistributedTrainingConfig
from fairseq.models.distributed_fairseq_model import DistributedFairseqModel

from tests.helpers.toy import ToyTask, build, diagonal_links, pair_dataset, toy_dictionary
from veco_plugin.objectives import build_criterion

PAIRS_PER_RANK = 4


def sample(d, first: int, count: int, bi_count=None):
    """``{"mono": batch, "bi": batch}`` of pairs ``first .. first+count-1`` (the first
    ``bi_count`` of them for "bi", none: no bilingual sub-batch)."""
    out = {}
    for kind, seed, n in (("mono", 0, count), ("bi", 1, count if bi_count is None else bi_count)):
        ds = pair_dataset(d, n_pairs=2 * PAIRS_PER_RANK, seed=seed)
        if n:
            out[kind] = ds.collater([ds[i] for i in range(first, first + n)])
    if "bi" in out:
        out["bi"]["links"] = diagonal_links(out["bi"], many_to_one=True)
    return out


def wrap(model, backend: str, find_unused: bool):
    """The model as fairseq's trainer wraps it for ``--ddp-backend BACKEND`` (its own
    ``DistributedFairseqModel``, device id 0 as on one GPU node)."""
    cfg = DistributedTrainingConfig(
        ddp_backend=backend, find_unused_parameters=find_unused, tpu=False
    )
    return DistributedFairseqModel(cfg, model, dist.group.WORLD, torch.device("cpu"))


def gradients(backend: str, criterion_name: str, rank: int, world: int, words: str):
    """This rank's gradients of one case: {parameter name: gradient}."""
    d = toy_dictionary()
    if criterion_name == "tlm_lid":  # XLM's language embeddings: a table over the tokens
        model = build("veco_tiny", d, seed=0, language_embeddings=2)
        table = torch.full((len(d),), -1)
        table[d.nspecial :] = torch.arange(len(d) - d.nspecial) % 2
        model.encoder.sentence_encoder.embed_tokens.set_languages(table)
    else:
        model = build("veco_tiny", d, seed=0)
    task = ToyTask(d)
    bi_count = None  # every rank has both sub-batches
    # every objective but ca_mlm leaves the cross-attention idle: torch's DDP needs
    # find_unused_parameters (the criteria refuse to build without it in a 2-rank group)
    find_unused = criterion_name != "ca_mlm"
    settings = {"ddp_backend": backend, "find_unused_parameters": find_unused}
    if criterion_name in ("ca_mlm", "tlm", "weam"):  # weam: links on every pair
        criterion = build_criterion(criterion_name, task, **settings)
    elif criterion_name == "tlm_lid":  # tlm with XLM's language embeddings
        criterion = build_criterion("tlm", task, **settings)
    elif criterion_name == "align_mlm":  # monolingual batches + the whole word list
        criterion = build_criterion(
            "align_mlm", task, align_dictionary=words, no_save=True, **settings
        )
        bi_count = 0
    elif criterion_name == "dict_mlm":  # every swap taken: the same inputs on any split
        criterion = build_criterion(
            "dict_mlm", task, align_dictionary=words, dict_mlm_prob=1.0, **settings
        )
        bi_count = 0
    else:  # dwa: the pointer network idle, and the last rank has no bilingual pairs
        criterion = build_criterion("dwa", task, **settings)
        bi_count = (world - 1) * PAIRS_PER_RANK if rank < 0 else (0 if rank == world - 1 else None)
    criterion.extend_model(model)
    if rank < 0:
        batch, wrapped = sample(d, 0, world * PAIRS_PER_RANK, bi_count), model
    else:
        batch = sample(d, rank * PAIRS_PER_RANK, PAIRS_PER_RANK, bi_count)
        wrapped = wrap(model, backend, find_unused)
    loss, _, _ = criterion(wrapped, batch)
    loss.backward()
    if hasattr(wrapped, "all_reduce_grads"):  # what fairseq's optimizer does for legacy_ddp
        wrapped.all_reduce_grads()
    return {n: p.grad for n, p in model.named_parameters() if p.grad is not None}


def main(rank, world, port, out, *cases):
    rank, world = int(rank), int(world)
    if rank >= 0:
        dist.init_process_group(
            "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world
        )
    for case in cases:
        backend, criterion_name = case.split(":")
        grads = gradients(backend, criterion_name, rank, world, os.path.join(out, "words.tsv"))
        os.makedirs(os.path.join(out, f"{backend}-{criterion_name}"), exist_ok=True)
        torch.save(grads, os.path.join(out, f"{backend}-{criterion_name}", f"rank{rank}.pt"))
    if rank >= 0:
        dist.destroy_process_group()


if __name__ == "__main__":
    main(*sys.argv[1:])
