"""A frozen veco_tiny checkpoint (tests/fixtures/checkpoints/make-veco-tiny.sh made it)
still loads through fairseq and gives the same H and S streams as when it was made."""

import argparse
import os
import sys

import torch
from fairseq import checkpoint_utils

from tests.helpers.toy import stream_logits

HERE = os.path.dirname(os.path.abspath(__file__))
FROZEN = os.path.join(HERE, "..", "fixtures", "checkpoints", "veco_tiny")


def _load(directory):
    models, _, task = checkpoint_utils.load_model_ensemble_and_task(
        [os.path.join(directory, "checkpoint.pt")], arg_overrides={"data": directory}
    )
    return models[0].eval(), task


def _streams(model, task):
    d = task.source_dictionary
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(d.nspecial, len(d) - 1, (4, 12), generator=g)
    tokens[:, 0], tokens[:, -1] = d.bos(), d.eos()
    tokens[1, -3:] = d.pad()
    with torch.no_grad():
        h, s = stream_logits(model, tokens)
    return {"tokens": tokens, "h": h, "s": s}


def test_frozen_checkpoint_gives_the_recorded_streams():
    model, task = _load(FROZEN)
    expected = torch.load(os.path.join(FROZEN, "expected.pt"))
    now = _streams(model, task)
    assert torch.equal(now["tokens"], expected["tokens"])
    torch.testing.assert_close(now["h"], expected["h"], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(now["s"], expected["s"], rtol=1e-5, atol=1e-5)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--write-expected", metavar="DIR", required=True)
    directory = parser.parse_args().write_expected
    from fairseq import utils

    utils.import_user_module(
        argparse.Namespace(user_dir=os.path.join(HERE, "..", "..", "veco_plugin"))
    )
    torch.save(_streams(*_load(directory)), os.path.join(directory, "expected.pt"))
    sys.exit(0)
