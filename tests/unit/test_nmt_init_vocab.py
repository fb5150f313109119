"""``veco_plugin.nmt_init.vocab``: where the pre-training dictionary is found, and its
size checked against the checkpoint's embedding rows."""

from argparse import Namespace

import pytest

from tests.helpers.nmt import dictionary_files
from veco_plugin.nmt_init import NmtInitError
from veco_plugin.nmt_init.vocab import find_dictionary, target_dictionary


def test_find_dictionary_next_to_the_checkpoint_then_in_its_data_dir(tmp_path):
    ckpt_dir, data = tmp_path / "ckpt", tmp_path / "data"
    ckpt_dir.mkdir()
    data.mkdir()
    pretrained = str(ckpt_dir / "checkpoint.pt")
    dictionary_files(data)
    legacy = {"args": Namespace(data=str(data)), "cfg": None}
    assert find_dictionary(None, pretrained, legacy) == str(data / "dict.txt")
    cfg = {"cfg": {"task": {"data": f"{data}:{tmp_path}/other"}}}
    assert find_dictionary(None, pretrained, cfg) == str(data / "dict.txt")
    dictionary_files(ckpt_dir)
    assert find_dictionary(None, pretrained, legacy) == str(ckpt_dir / "dict.txt")
    assert find_dictionary(str(data / "dict.txt"), pretrained, {}) == str(data / "dict.txt")
    with pytest.raises(NmtInitError, match="--dict .*missing.txt: no such file"):
        find_dictionary(str(tmp_path / "missing.txt"), pretrained, {})
    with pytest.raises(NmtInitError, match="cannot find the pre-training dictionary.*--dict"):
        find_dictionary(None, str(tmp_path / "x.pt"), {"cfg": None})


def test_target_dictionary_is_the_pretraining_one_with_mask(tmp_path):
    d = dictionary_files(tmp_path)
    pretrained = str(tmp_path / "veco.pt")
    target = target_dictionary(pretrained, {}, rows=len(d))
    assert target.dictionary.symbols == d.symbols and target.keep_rows is None
    assert target.path == str(tmp_path / "dict.txt")
    with pytest.raises(NmtInitError, match="55 types with <mask> but the checkpoint's .* 60 rows"):
        target_dictionary(pretrained, {}, rows=60)
