"""``dict_mlm`` (DICT-MLM): ``code_switch`` (ALIGN-MLM's authors' collator: a selected input
token shows its dictionary translation with probability p, the target the original) and
``synonym_target`` (Chaudhary et al.: the target at a masked position is, with probability
p, the token's translation when it has one)."""

import math

import pytest
import torch
import torch.nn.functional as F

from tests.helpers.catalogs import write_mo
from tests.helpers.quickstart import config
from tests.helpers.toy import ToyTask, build, pair_batch, toy_dictionary
from veco_plugin.data.bilingual_dictionary import (
    ResolvedDictionary,
    read_token_pairs,
    save_resolved,
)
from veco_plugin.errors import VecoUserError
from veco_plugin.models.requests import PlugOut
from veco_plugin.objectives import build_criterion, objective
from veco_plugin.quickstart import options, stages
from veco_plugin.terms.dictionary_mlm import (
    code_switched_inputs,
    dictionary_targets,
    translation_table,
)

# toy word list: single pieces both ways, a two-piece side (skipped), a repeated source
PAIRS = [
    (("w1",), ("w2",)),
    (("w3",), ("w4",)),
    (("w5",), ("w6", "w7")),
    (("w1",), ("w8",)),
    (("w9",), ("w10",)),
]
# w1 keeps its first translation; w8 -> w1 is the later entry read backwards
TRANSLATIONS = {
    **{"w1": "w2", "w2": "w1", "w3": "w4", "w4": "w3", "w9": "w10", "w10": "w9"},
    "w8": "w1",
}


def _write(d, path, pairs=PAIRS):
    words = [(" ".join(s), " ".join(t)) for s, t in pairs]
    ids = [(tuple(map(d.index, s)), tuple(map(d.index, t))) for s, t in pairs]
    save_resolved(ResolvedDictionary.from_pieces(words, ids, d.pad()), str(path))
    return path


@pytest.fixture
def word_list(tmp_path):
    return _write(toy_dictionary(), tmp_path / "train.tsv")


SYNONYM = {"dict_mlm_mode": "synonym_target"}


def _criterion(name, d, word_list, **settings):
    if name != "tlm":
        settings.setdefault("align_dictionary", str(word_list))
    return build_criterion(name, ToyTask(d), **settings)


def _masked_logits(model, batch, tokens=None):
    """(M, V) LM logits at the masked positions, row-major, and their original targets;
    ``tokens``: the input (default: the batch's masked one)."""
    target = batch["pair_target"]
    masked = target.ne(toy_dictionary().pad())
    tokens = batch["pair_tokens"] if tokens is None else tokens
    logits = model(requests={"p": PlugOut(tokens, masked)})["p"].logits
    return logits, target[masked]


def _table(d):
    table = torch.arange(len(d))
    for s, t in TRANSLATIONS.items():
        table[d.index(s)] = d.index(t)
    return table


# ------------------------------------------------------------------ the tensor math


def test_translation_table_is_both_ways_first_wins_identity_elsewhere():
    table = translation_table([(5, 6), (7, 8), (5, 9), (10, 5)], 12)
    # 5 -> 6 (first listed), 6 -> 5, 7 <-> 8, 9 -> 5 (reverse of a later entry), 10 -> 5
    assert table.tolist() == [0, 1, 2, 3, 4, 6, 5, 8, 7, 5, 5, 11]


def test_swaps_only_masked_translatable_targets_at_the_stated_rate():
    d = toy_dictionary()
    table = _table(d)
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(d.nspecial, len(d) - 1, (1000, 250), generator=g)
    masked = torch.rand(tokens.shape, generator=g) < 0.15
    target = torch.where(masked, tokens, torch.full_like(tokens, d.pad()))
    swapped, swap = dictionary_targets(target, table, 0.5, torch.Generator().manual_seed(1))

    changed = swapped.ne(target)
    assert torch.equal(changed, swap)
    assert not changed[~masked].any()  # unmasked positions (padding) never change
    assert torch.equal(swapped[changed], table[target[changed]])  # only to translations
    has = table[target].ne(target)
    assert not changed[~has].any()  # a token without a translation keeps its target
    # rate: swaps among masked translatable targets ~ Binomial(n, 0.5), within 5 sigma
    n, k = int(has.sum()), int(swap.sum())
    assert n > 3000
    assert abs(k - 0.5 * n) < 5 * math.sqrt(n * 0.25), (k, n)


def test_prob_zero_changes_nothing_and_prob_one_swaps_every_translatable_target():
    d = toy_dictionary()
    table = _table(d)
    target = torch.tensor([[d.pad(), d.index("w1"), d.index("w5"), d.index("w10"), d.pad()]])
    assert torch.equal(dictionary_targets(target, table, 0.0)[0], target)
    expected = [[d.pad(), d.index("w2"), d.index("w5"), d.index("w9"), d.pad()]]
    assert dictionary_targets(target, table, 1.0)[0].tolist() == expected


def test_code_switch_on_a_real_batch_changes_only_selected_positions_in_the_shares():
    """The task's masked batch (80/10/10 on 30 %), half of the ordinary tokens with a
    translation: of the selected positions about half are switched (to the translation,
    or left as the original token when it has none), the rest keep the task's 80/10/10;
    nothing else changes and the labels are untouched."""
    d = toy_dictionary()
    ordinary = list(range(d.nspecial, d.index("<mask>")))
    table = translation_table(list(zip(ordinary[:24:2], ordinary[1:24:2])), len(d))
    batch = pair_batch(d, n_pairs=400, seed=5)
    tokens, target = batch["pair_tokens"], batch["pair_target"]
    label_copy = target.clone()
    switched_input, switched, swap = code_switched_inputs(
        tokens, target, table, 0.5, d.pad(), torch.Generator().manual_seed(2)
    )
    assert torch.equal(target, label_copy)  # the labels stay the originals
    selected = target.ne(d.pad())
    assert not switched[~selected].any()
    assert torch.equal(switched_input[~selected], tokens[~selected])  # only selected change
    has = table[target].ne(target) & selected
    # switched: the translation where there is one, else the original token, unmasked
    assert torch.equal(switched_input[switched & has], table[target[switched & has]])
    assert torch.equal(switched_input[switched & ~has], target[switched & ~has])
    assert torch.equal(swap, switched & has)
    # the other selected positions keep the task's input
    rest = selected & ~switched
    assert torch.equal(switched_input[rest], tokens[rest])

    def within(k, n, p):  # Binomial(n, p) within 5 sigma
        return abs(k - p * n) < 5 * math.sqrt(n * p * (1 - p))

    n = int(selected.sum())
    assert n > 1500
    assert within(int(switched.sum()), n, 0.5)
    assert within(int(swap.sum()), int(has.sum()), 0.5)
    m = int(rest.sum())
    masked = int((switched_input[rest] == d.index("<mask>")).sum())
    kept = int((switched_input[rest] == target[rest]).sum())
    assert within(masked, m, 0.8)
    assert within(kept, m, 0.1 + 0.1 / len(ordinary))  # kept, or drawn as itself
    assert within(m - masked - kept, m, 0.1 * (1 - 1 / len(ordinary)))


# ------------------------------------------------------------------------ the criterion


@pytest.mark.parametrize("mode", ["code_switch", "synonym_target"])
def test_prob_zero_is_masked_lm_exactly(word_list, mode):
    d = toy_dictionary()
    model = build("veco_tiny", d, seed=0).eval()
    sample = {"mono": pair_batch(d, seed=0)}
    settings = dict(dict_mlm_prob=0.0, dict_mlm_mode=mode)
    loss, size, log = _criterion("dict_mlm", d, word_list, **settings)(model, sample)
    mlm, mlm_size, mlm_log = _criterion("tlm", d, word_list)(model, sample)
    assert torch.equal(loss, mlm) and size == mlm_size
    assert torch.equal(log["mono_dict_loss"], mlm_log["mono_mlm_loss"])
    assert int(log["dict_swapped"]) == 0


def test_code_switch_loss_is_the_model_on_the_switched_input_against_the_originals(
    word_list,
):
    d = toy_dictionary()
    model = build("veco_tiny", d, seed=0).eval()
    batch = pair_batch(d, n_pairs=12, seed=3)
    criterion = _criterion("dict_mlm", d, word_list, seed=7)
    loss, size, log = criterion(model, {"mono": batch})
    again, _, _ = criterion(model, {"mono": batch})
    assert torch.equal(loss, again)  # the valid loss depends on the model alone

    tokens, switched, swap = code_switched_inputs(
        batch["pair_tokens"], batch["pair_target"], _table(d), 0.5, d.pad(),
        torch.Generator().manual_seed(7),
    )  # fmt: skip
    assert int(swap.sum()) > 0 and int(switched.sum()) > int(swap.sum())
    logits, original = _masked_logits(model, batch, tokens)
    torch.testing.assert_close(loss, F.cross_entropy(logits.float(), original, reduction="sum"))
    assert size == original.numel()
    assert int(log["dict_swapped"]) == int(swap.sum())
    target = batch["pair_target"]
    assert int(log["dict_translatable"]) == int(_table(d)[target].ne(target).sum())


def test_code_switch_carries_the_translations_language(word_list):
    """With language embeddings, a swapped token is embedded with its translation's
    language vector: the token's language is a lookup by the token."""
    d = toy_dictionary()
    model = build("veco_tiny", d, seed=0, language_embeddings=2).eval()
    embed = model.encoder.sentence_encoder.embed_tokens
    language = torch.full((len(d),), -1)
    language[d.index("w1")], language[d.index("w2")] = 0, 1
    embed.set_languages(language)
    tokens = torch.tensor([[d.index("w1")]])
    target = tokens.clone()
    table = _table(d)
    switched, _, swap = code_switched_inputs(tokens, target, table, 1.0, d.pad())
    assert switched.tolist() == [[d.index("w2")]] and swap.all()
    expected = embed.weight[d.index("w2")] + embed.languages.weight[1]
    torch.testing.assert_close(embed(switched)[0, 0], expected)


def test_prob_one_loss_is_cross_entropy_against_every_translation(word_list):
    d = toy_dictionary()
    model = build("veco_tiny", d, seed=0).eval()
    batch = pair_batch(d, n_pairs=12, seed=3)
    loss, size, log = _criterion("dict_mlm", d, word_list, dict_mlm_prob=1.0, **SYNONYM)(
        model, {"mono": batch}
    )
    logits, original = _masked_logits(model, batch)
    names = [d[i] for i in original.tolist()]
    gold = torch.tensor([d.index(TRANSLATIONS.get(w, w)) for w in names])
    assert (gold != original).sum() > 0, "the batch has translatable masked tokens"
    torch.testing.assert_close(loss, F.cross_entropy(logits.float(), gold, reduction="sum"))
    assert size == original.numel()
    swapped = int((gold != original).sum())
    assert int(log["dict_swapped"]) == int(log["dict_translatable"]) == swapped


def test_prob_half_at_validation_is_the_hand_swap_with_the_seeded_draws(word_list):
    d = toy_dictionary()
    model = build("veco_tiny", d, seed=0).eval()
    batch = pair_batch(d, n_pairs=12, seed=3)
    criterion = _criterion("dict_mlm", d, word_list, seed=7, **SYNONYM)
    loss, _, log = criterion(model, {"mono": batch})
    again, _, _ = criterion(model, {"mono": batch})
    assert torch.equal(loss, again)  # the valid loss depends on the model alone

    target = batch["pair_target"]
    draws = torch.rand(target.shape, generator=torch.Generator().manual_seed(7))
    table = _table(d)
    swapped = torch.where((draws < 0.5) & table[target].ne(target), table[target], target)
    logits, _ = _masked_logits(model, batch)
    gold = swapped[target.ne(d.pad())]
    torch.testing.assert_close(loss, F.cross_entropy(logits.float(), gold, reduction="sum"))
    assert int(log["dict_swapped"]) == int(swapped.ne(target).sum())


@pytest.mark.parametrize("mode", ["code_switch", "synonym_target"])
def test_training_draws_follow_the_seeded_global_generator(word_list, mode):
    d = toy_dictionary()
    model = build("veco_tiny", d, seed=0).train()
    criterion = _criterion("dict_mlm", d, word_list, dict_mlm_mode=mode)
    sample = {"mono": pair_batch(d, n_pairs=12, seed=3)}
    losses = []
    for seed in (1, 1, 2):
        torch.manual_seed(seed)  # what fairseq's trainer does before each update
        losses.append(criterion(model, sample)[0])
    assert torch.equal(losses[0], losses[1]) and not torch.equal(losses[0], losses[2])


def test_combines_through_veco_terms(word_list):
    d = toy_dictionary()
    model = build("veco_tiny", d, seed=0).eval()
    sample = {"mono": pair_batch(d, seed=0), "bi": pair_batch(d, seed=1)}
    loss, size, log = _criterion("dict_mlm", d, word_list)(model, sample)
    mixed, mixed_size, mixed_log = _criterion(
        "veco_terms", d, word_list, terms="mono_dict=1,bi_tlm=1"
    )(model, sample)
    assert torch.equal(loss, mixed) and size == mixed_size
    assert set(log) == set(mixed_log) and "bi_tlm_loss" in log
    # with ALIGN-MLM's term on the same dictionary
    both_terms = dict(terms="mono_dict=1,align=10", save_dir=str(word_list.parent / "ck"))
    both, _, both_log = _criterion("veco_terms", d, word_list, **both_terms)(
        model, {"mono": sample["mono"]}
    )
    assert "align_cos_sum" in both_log and "mono_dict_loss" in both_log


def test_token_pairs_file_is_looked_up_in_the_dictionary(tmp_path):
    d = toy_dictionary()
    path = tmp_path / "bilingual.txt"
    path.write_text("w1 w2\n\nw3 w4\n")
    ids = [(d.index("w1"), d.index("w2")), (d.index("w3"), d.index("w4"))]
    assert [i for _, _, i in read_token_pairs(str(path), d)] == ids
    model = build("veco_tiny", d, seed=0).eval()
    batch = pair_batch(d, n_pairs=12, seed=3)
    settings = dict(align_dictionary_pieces=True, dict_mlm_prob=1.0, **SYNONYM)
    _, _, log = _criterion("dict_mlm", d, path, **settings)(model, {"mono": batch})
    _, original = _masked_logits(model, batch)
    pieces = {d.index(w) for w in ("w1", "w2", "w3", "w4")}
    assert int(log["dict_swapped"]) == sum(int(t) in pieces for t in original)


# ------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("prob", [-0.1, 1.5, float("nan")])
def test_prob_outside_zero_one_is_refused(word_list, prob):
    with pytest.raises(VecoUserError, match=r"^--dict-mlm-prob .*: a probability"):
        _criterion("dict_mlm", toy_dictionary(), word_list, dict_mlm_prob=prob)


def test_bad_dictionaries_are_one_line(tmp_path, word_list):
    d = toy_dictionary()
    with pytest.raises(VecoUserError, match="needs --align-dictionary FILE"):
        build_criterion("dict_mlm", ToyTask(d))
    with pytest.raises(VecoUserError, match="nope.txt: no such file"):
        _criterion("dict_mlm", d, tmp_path / "nope.txt")
    with pytest.raises(VecoUserError, match="nope.txt: no such file"):
        _criterion("dict_mlm", d, tmp_path / "nope.txt", align_dictionary_pieces=True)
    multi = _write(d, tmp_path / "multi.tsv", [PAIRS[2]])
    with pytest.raises(VecoUserError, match="no entry is one piece on both sides"):
        _criterion("dict_mlm", d, multi)
    special = _write(d, tmp_path / "special.tsv", [(("w1",), ("<pad>",))])
    with pytest.raises(VecoUserError, match="names the special symbol '<pad>'"):
        _criterion("dict_mlm", d, special)
    unknown = tmp_path / "bilingual.txt"
    unknown.write_text("w1 w2\nw3 zzz\n")
    with pytest.raises(VecoUserError, match=rf"^{unknown}:2: 'zzz' is not a token of the"):
        _criterion("dict_mlm", d, unknown, align_dictionary_pieces=True)
    unknown.write_text("<mask> w2\n")
    with pytest.raises(VecoUserError, match=rf"^{unknown}:1: '<mask>' is a special symbol"):
        _criterion("dict_mlm", d, unknown, align_dictionary_pieces=True)
    with pytest.raises(VecoUserError, match="^--align-heldout .* drop --align-heldout"):
        _criterion("dict_mlm", d, word_list, align_heldout=str(word_list))


# ------------------------------------------------------------------------ the quickstart


def test_the_quickstart_runs_the_row_only_when_asked(tmp_path, monkeypatch):
    write_mo(tmp_path / "de" / "LC_MESSAGES" / "app.mo", {"File": "Datei"})
    monkeypatch.setattr(options, "DEFAULT_LOCALE_DIR", str(tmp_path))
    assert objective("dict_mlm").quickstart_opt_in
    assert "dictmlm" not in config().switches and "dictmlm" not in stages.inits(config())
    assert "--no-dictmlm" not in options.get_parser().format_help()
    cfg = config("--dictmlm", "--no-alignmlm")
    assert stages.inits(cfg)[-2:] == ["dictmlm", "random"]
    assert stages.needs(cfg)[0] == "word_list"
    pipeline = next(p for p in stages.pipelines(cfg) if p[0].name == "pretrain-dictmlm")
    command = pipeline[0].command
    assert command[command.index("--criterion") + 1] == "dict_mlm"
    assert command[-2:] == ["--align-dictionary", "/run/word-list/train.txt"]
    assert [s.name for s in pipeline[1:]] == ["init-dictmlm", "finetune-dictmlm", "eval-dictmlm"]
    with pytest.raises(options.QuickstartError, match=r"\(or drop --dictmlm\)$"):
        config("--dictmlm", "--no-alignmlm", "--src", "fr")
