"""fairseq-train with the newer objectives (``dwa``, ``align_mlm``, ``weam``,
``veco_terms``), their settings and ``veco_pretraining``'s flags, tried as a hostile user
would: values the papers' equations forbid, weights below 0, terms without their data,
flags that contradict each other. Each is refused before the first update in one line
naming the flag and the fix.

One row per case. Most rows are built in-process exactly as ``fairseq_cli.train`` does
up to the first update (parse the command line, set up the task, build the model and
the criterion, load the validation split); the rows of :data:`REAL` run the real
``fairseq-train`` (two at a time) to show the whole command ends in that one line, with
a non-zero exit, no traceback and no checkpoint. The data: the frozen ``veco_tiny``
dictionary and a few random lines binarized in-process (mono/en, mono/de, bi/en-de;
train and valid; no word alignments).
"""

import os
import shutil
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch
from fairseq import tasks
from fairseq.data import Dictionary, indexed_dataset

from tests.helpers.runner import REPO, pretrain_args, run, train_cfg
from veco_plugin.data.bilingual_dictionary import ResolvedDictionary, save_resolved
from veco_plugin.errors import VecoUserError

FROZEN = os.path.join(REPO, "tests", "fixtures", "checkpoints", "veco_tiny")


def _binarize(prefix: str, d: Dictionary, lines: int, seed: int) -> None:
    """``prefix.{bin,idx}``: ``lines`` random lines of ordinary symbols, each ending in
    ``</s>``, as fairseq-preprocess writes them."""
    rng = np.random.default_rng(seed)
    builder = indexed_dataset.make_builder(f"{prefix}.bin", impl="mmap", vocab_size=len(d))
    for _ in range(lines):
        ids = rng.integers(d.nspecial, len(d) - 1, size=int(rng.integers(3, 12)))
        builder.add_item(torch.IntTensor([*ids, d.eos()]))
    builder.finalize(f"{prefix}.idx")


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    """DATA (no word alignments), a resolved word list and a directory."""
    root = tmp_path_factory.mktemp("hostile")
    data = root / "data"
    for sub in ("mono/en", "mono/de", "bi/en-de"):
        (data / sub).mkdir(parents=True)
    shutil.copy(os.path.join(FROZEN, "dict.txt"), data / "dict.txt")
    d = Dictionary.load(str(data / "dict.txt"))
    for seed, split in enumerate(("train", "valid")):
        _binarize(str(data / "mono" / "en" / split), d, 8, 10 * seed)
        _binarize(str(data / "mono" / "de" / split), d, 8, 10 * seed + 1)
        for lang in ("en", "de"):
            _binarize(str(data / "bi" / "en-de" / f"{split}.en-de.{lang}"), d, 8, 10 * seed + 2)
    links = root / "links"  # the same DATA with word alignments (link 0-0 on every line)
    shutil.copytree(data, links)
    for split in ("train", "valid"):
        builder = indexed_dataset.make_builder(
            str(links / "bi" / "en-de" / f"{split}.align.en-de.bin"), impl="mmap"
        )
        for _ in range(8):
            builder.add_item(torch.IntTensor([0, 0]))
        builder.finalize(str(links / "bi" / "en-de" / f"{split}.align.en-de.idx"))
    words = root / "words.tsv"
    pieces = [((5,), (6,)), ((7,), (8, 9))]
    resolved = ResolvedDictionary.from_pieces([("a", "b"), ("c", "d")], pieces, d.pad())
    save_resolved(resolved, str(words))
    (root / "lists").mkdir()
    langs = root / "langs.txt"  # a few ordinary tokens of each language
    langs.write_text("".join(f"{d[i]} {'en' if i % 2 else 'de'}\n" for i in range(10, 16)))
    return {
        "langs": str(langs),
        "root": root,
        "data": str(data),
        "links": str(links),
        "words": str(words),
        "dir": str(root / "lists"),
    }


def _args(paths, criterion, extra, save="unused", data="data"):
    filled = [str(a).format(**paths) for a in extra]
    return pretrain_args(paths[data], save, criterion, 2, *filled)


def _build(paths, criterion, extra, data="data"):
    """What fairseq-train does before its first update, in-process."""
    cfg = train_cfg(_args(paths, criterion, extra, str(paths["root"] / "ck"), data))
    task = tasks.setup_task(cfg.task)
    task.build_model(cfg.model)
    task.build_criterion(cfg.criterion)
    task.load_dataset("valid")


WEIGHT = "a loss weight must be a finite number >= 0"
# (criterion, extra fairseq-train args, substrings of the one error line)
REFUSED = [
    # XLM-Align (Chi et al., 2021, §3.1, Table 11)
    ("dwa", ["--filter-alpha", "1.5"], ["--filter-alpha 1.5:", "eq. 9", "[0, 1]"]),
    ("dwa", ["--filter-alpha", "-0.1"], ["--filter-alpha -0.1:", "[0, 1]"]),
    ("dwa", ["--filter-alpha", "nan"], ["--filter-alpha nan:"]),
    ("dwa", ["--sinkhorn-mu", "0"], ["--sinkhorn-mu 0.0:", "eq. 5", "μ > 0"]),
    ("dwa", ["--sinkhorn-mu", "inf"], ["--sinkhorn-mu inf:", "finite μ > 0"]),
    ("dwa", ["--sinkhorn-iterations", "0"], ["--sinkhorn-iterations 0:", "at least 1"]),
    ("dwa", ["--filter-iterations", "-1"], ["--filter-iterations -1:", "at least 1"]),
    ("dwa", ["--label-layer", "5"], ["--label-layer 5: the model has layers 1..2"]),
    ("dwa", ["--dwa-layer", "0"], ["--dwa-layer 0: the model has layers 1..2"]),
    ("dwa", ["--dwa-weight", "-1"], ["--dwa-weight -1.0:", WEIGHT]),
    ("dwa", ["--tlm-weight", "nan"], ["--tlm-weight nan:", WEIGHT]),
    ("dwa", ["--mlm-weight", "inf"], ["--mlm-weight inf:", WEIGHT]),
    ("dwa", ["--bi-pairs", ""], ["--criterion dwa: bi_dwa reads bilingual batches and "
                                 "--bi-pairs names none", "(or --dwa-weight 0)"]),
    ("dwa", ["--mlm-weight", "0", "--tlm-weight", "0", "--dwa-weight", "0"],
     ["--criterion dwa: every loss weight is 0 (--mlm-weight, --tlm-weight, --dwa-weight)"]),
    # ALIGN-MLM (Tang et al., §3: L_MLM + α·L_ALIGN)
    ("align_mlm", ["--align-dictionary", "{words}", "--align-weight", "-10"],
     ["--align-weight -10.0:", WEIGHT]),
    ("align_mlm", ["--align-dictionary", "{dir}"],
     ["--align-dictionary ", "is a directory", "DIR/train.txt"]),
    ("align_mlm", ["--align-dictionary", "{words}", "--align-heldout", "{words}"],
     ["--align-heldout ", "is the --align-dictionary file", "DIR/heldout.txt"]),
    ("align_mlm", ["--align-dictionary", "{root}/missing.txt"], ["missing.txt: no such file"]),
    # WEAM (Yang et al., eq. 11: L_mp + λ·L_cp)
    ("weam", ["--cp-weight", "-1"], ["--cp-weight -1.0:", WEIGHT]),
    ("weam", ["--bi-pairs", ""], ["--criterion weam: bi_cp reads bilingual batches",
                                  "(or --cp-weight 0)"]),
    ("weam", [], ["--criterion weam: bi_cp reads word alignments",
                  "bi/en-de/train.align.en-de.{bin,idx} is missing", "--align-with eflomal"]),
    # veco_terms
    ("veco_terms", ["--terms", "mono_mlm=1,bi_tlm=-1"], ["--terms bi_tlm=-1:", WEIGHT]),
    ("veco_terms", ["--terms", "bi_dwa=inf"], ["--terms bi_dwa=inf:", WEIGHT]),
    ("veco_terms", ["--terms", "mono_mlm=1,mono_mlm=2"], ["--terms: mono_mlm is given twice"]),
    ("veco_terms", ["--terms", "mono_mlm=1,bogus=1"], ["--terms: unknown term 'bogus'"]),
    ("veco_terms", ["--terms", "bi_tlm=0"], ["at least one term with a non-zero weight"]),
    ("veco_terms", ["--terms", "mono_mlm=1,bi_tlm=1,bi_dwa=1", "--bi-pairs", ""],
     ["--terms mono_mlm=1,bi_tlm=1,bi_dwa=1: bi_tlm reads bilingual batches",
      "add --bi-pairs SRC-TGT", "drop bi_tlm from --terms"]),
    ("veco_terms", ["--terms", "mono_mlm=1,bi_tlm=1", "--mono-langs", ""],
     ["mono_mlm reads monolingual batches and --mono-langs names none"]),
    ("veco_terms", ["--terms", "mono_mlm=1", "--no-stop-gradient"],
     ["--no-stop-gradient acts on the CA-MLM cross terms alone", "drop --no-stop-gradient"]),
    ("veco_terms", ["--terms", "mono_mlm=1", "--filter-alpha", "2"], ["--filter-alpha 2.0:"]),
    ("veco_terms", ["--terms", "mono_mlm=1,mono_ca=1", "--tlm-reset-positions"],
     ["--tlm-reset-positions acts on the concatenated pair", "drop --tlm-reset-positions"]),
    ("veco_terms", ["--terms", "mono_mlm=1,bi_cp=1"], ["bi_cp reads word alignments"]),
    ("veco_terms", ["--terms", "align=1"], ["the align term needs --align-dictionary FILE"]),
    # the other recipes share the checks
    ("tlm", ["--mlm-weight", "0", "--bi-pairs", ""],
     ["--criterion tlm trains nothing: its weighted terms (bi_tlm) read bilingual batches"]),
    ("ca_mlm", ["--ca-weight", "-1"], ["--ca-weight -1.0:", WEIGHT]),
    ("ca_mlm", ["--ca-weight", "0", "--no-stop-gradient"], ["drop --no-stop-gradient"]),
    # veco_pretraining's flags
    ("dwa", ["--multilang-sampling-alpha", "2"], ["--multilang-sampling-alpha 2.0:", "[0, 1]"]),
    ("dwa", ["--multilang-sampling-alpha", "-1"], ["--multilang-sampling-alpha -1.0:"]),
    ("dwa", ["--max-bi-positions", "2"], ["--max-bi-positions 2:", "at least 3"]),
    ("dwa", ["--max-mono-positions", "0"], ["--max-mono-positions 0:", "at least 3"]),
    ("dwa", ["--cross-attention-only-updates", "-5"], ["--cross-attention-only-updates -5:"]),
    ("weam", ["--cross-attention-only-updates", "10"],
     ["--cross-attention-only-updates 10 trains only the cross-attention, which --criterion "
      "weam never runs", "drop the flag"]),
    ("dwa", ["--mono-langs", "en,en"], ["--mono-langs en,en: en given twice"]),
    ("dwa", ["--bi-pairs", "en-de,en-de"], ["--bi-pairs en-de,en-de: en-de given twice"]),
    ("dwa", ["--mono-batch-size", "0"], ["--mono-batch-size 0: give a positive number of pairs"]),
    ("dwa", ["--bi-max-tokens", "-1"], ["--bi-max-tokens -1: give a positive number of tokens"]),
    ("weam", ["--bi-mask-prob", "1.5"], ["--bi-mask-prob 1.5: must be in (0, 1]"]),
    # XLM's language embeddings: the model flag and the task's table go together
    ("tlm", ["--language-embeddings", "2"],
     ["--language-embeddings 2: give --token-languages FILE"]),
    ("tlm", ["--token-languages", "{langs}"],
     ["the model has no language embeddings: add --language-embeddings 2"]),
    ("tlm", ["--language-embeddings", "3", "--token-languages", "{langs}"],
     ["--language-embeddings 3: --mono-langs en,de names 2 languages"]),
    ("tlm", ["--language-embeddings", "-1"], ["--language-embeddings -1: a count of languages"]),
]  # fmt: skip

# the edges of every range, and a recipe's shared terms where the data lacks theirs
ACCEPTED = [
    ("dwa", ["--filter-alpha", "1", "--sinkhorn-iterations", "1", "--filter-iterations", "1",
             "--sinkhorn-mu", "0.01", "--label-layer", "1", "--dwa-layer", "2",
             "--multilang-sampling-alpha", "0", "--max-bi-positions", "3"]),
    ("dwa", ["--filter-alpha", "0", "--multilang-sampling-alpha", "1", "--mlm-weight", "0"]),
    ("dwa", ["--bi-pairs", "", "--dwa-weight", "0"]),
    ("ca_mlm", ["--bi-pairs", "", "--no-stop-gradient"]),
    ("align_mlm", ["--align-dictionary", "{words}", "--bi-pairs", ""]),
    ("veco_terms", ["--terms", "mono_mlm=1,bi_tlm=0", "--bi-pairs", ""]),
    ("tlm", ["--tlm-reset-positions"]),
    ("dwa", ["--tlm-weight", "0", "--tlm-reset-positions"]),
    ("tlm", ["--language-embeddings", "2", "--token-languages", "{langs}"]),
]  # fmt: skip


def _name(row):
    return f"{row[0]} {' '.join(row[1]) or '(defaults)'}"


@pytest.mark.parametrize("criterion, extra, expected", REFUSED, ids=map(_name, REFUSED))
def test_refused_before_the_first_update_in_one_line(paths, criterion, extra, expected):
    with pytest.raises(VecoUserError) as refused:
        _build(paths, criterion, extra)
    line = str(refused.value)
    assert "\n" not in line
    for text in expected:
        assert text in line, line


@pytest.mark.parametrize("criterion, extra", ACCEPTED, ids=map(_name, ACCEPTED))
def test_edges_of_the_ranges_are_accepted(paths, criterion, extra):
    _build(paths, criterion, extra)


def test_weam_with_word_alignments_is_accepted(paths):
    _build(paths, "weam", [], data="links")
    _build(paths, "veco_terms", ["--terms", "bi_cp=1", "--mono-langs", ""], data="links")


# the examples and a refusal at data loading, as real commands
REAL = {
    "filter_alpha": ("dwa", ["--filter-alpha", "1.5"]),
    "negative_term": ("veco_terms", ["--terms", "mono_mlm=1,bi_tlm=-1"]),
    "bilingual_terms_without_bitext": (
        "veco_terms", ["--terms", "mono_mlm=1,bi_tlm=1,bi_dwa=1", "--bi-pairs", ""]),
    "weam_without_alignments": ("weam", []),
}  # fmt: skip


@pytest.fixture(scope="module")
def ends(paths):
    """{case: the CompletedProcess of its fairseq-train}, two at a time."""

    def one(case):
        criterion, extra = REAL[case]
        save = paths["root"] / "real" / case
        return run("fairseq-train", _args(paths, criterion, extra, str(save)), check=False)

    with ThreadPoolExecutor(2) as pool:
        return dict(zip(REAL, pool.map(one, REAL)))


@pytest.mark.parametrize("case", sorted(REAL))
def test_the_real_command_ends_in_that_line(paths, ends, case):
    proc = ends[case]
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    criterion, extra = REAL[case]
    with pytest.raises(VecoUserError) as refused:
        _build(paths, criterion, extra)
    assert last == f"fairseq-train: error: {refused.value}"
    assert not list((paths["root"] / "real").rglob("*.pt"))


# a --token-languages line the Dictionary or --mono-langs cannot place: file and line
BAD_LANGUAGE_LINES = [
    ("{t10} en\n{t11} fr\n", ":2: language 'fr' is not one of --mono-langs en,de"),
    ("{t10} en\nnot-a-token de\n", ":2: 'not-a-token' is not in the dictionary"),
    ("{t10} en\n{t10} de\n", ":2: '{t10}' is listed twice"),
    ("</s> en\n", ":1: '</s>' is a special token"),
    ("<mask> en\n", ":1: '<mask>' is a special token"),
    ("\n{t10} en de\n", ":2: give 'TOKEN LANG', got 3 fields"),
    ("\n\n", ": no 'TOKEN LANG' line: give each token's language"),
]  # fmt: skip


@pytest.mark.parametrize("text, expected", BAD_LANGUAGE_LINES)
def test_a_bad_token_languages_line_is_named(paths, tmp_path, text, expected):
    d = Dictionary.load(os.path.join(paths["data"], "dict.txt"))
    tokens = {"t10": d[10], "t11": d[11]}
    bad = tmp_path / "langs.txt"
    bad.write_text(text.format(**tokens), encoding="utf-8")
    extra = ["--language-embeddings", "2", "--token-languages", str(bad)]
    with pytest.raises(VecoUserError) as refused:
        _build(paths, "tlm", extra)
    line = str(refused.value)
    assert "\n" not in line and line.startswith(
        f"--token-languages {bad}" + expected.format(**tokens)
    )
