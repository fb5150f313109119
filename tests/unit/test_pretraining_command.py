"""``PretrainingCommand``'s None settings leave fairseq's defaults: the command without the
flag parses to what fairseq-train runs without it."""

from tests.helpers.runner import train_cfg
from veco_plugin.pretraining_command import PretrainingCommand


def _cfg(**settings):
    command = PretrainingCommand(
        data="DATA", save_dir="unused", criterion="ca_mlm", updates=10, max_tokens=1024,
        max_positions=48, **settings,
    )  # fmt: skip
    return command.args(), train_cfg(command.args())


def test_no_warmup_is_a_constant_lr():
    args, cfg = _cfg(warmup=None, lr="1e-3")
    assert "--lr-scheduler" not in args and "--warmup-updates" not in args
    assert cfg.lr_scheduler._name == "fixed" and cfg.lr_scheduler.warmup_updates == 0
    assert list(cfg.optimization.lr) == [1e-3]


def test_a_warmup_is_the_inverse_square_root_schedule():
    _, cfg = _cfg(warmup=20)
    assert cfg.lr_scheduler._name == "inverse_sqrt" and cfg.lr_scheduler.warmup_updates == 20


def test_no_adam_settings_are_fairseqs_adam():
    args, cfg = _cfg(warmup=20, adam_betas=None, adam_eps=None, clip_norm=None)
    assert not {"--adam-betas", "--adam-eps", "--clip-norm"} & set(args)
    assert list(cfg.optimizer.adam_betas) == [0.9, 0.999] and cfg.optimizer.adam_eps == 1e-8
    assert cfg.optimization.clip_norm == 0.0


def test_the_quickstarts_adam_by_default():
    _, cfg = _cfg(warmup=20)
    assert (cfg.optimizer.adam_betas, cfg.optimizer.adam_eps) == ("(0.9,0.98)", 1e-6)
    assert cfg.optimization.clip_norm == 1.0
