"""fairseq's ``--ddp-backend pytorch_ddp`` (the default) and ``c10d`` on a CPU model.

fairseq's ``DistributedFairseqModel`` builds torch's ``DistributedDataParallel`` with
``device_ids=[device_id], output_device=device_id`` for every model, which torch refuses
for a module on the CPU ("device_ids and output_device arguments only work with
single-device/multiple-device GPU modules or CPU modules"). Importing the plugin puts
:class:`VecoDistributedDataParallel` where fairseq looks the class up: the same DDP, which
leaves both out for a CPU module and passes everything else on as fairseq gave it.
"""

from torch.nn.parallel import DistributedDataParallel

from ..patching import wrap_once


class VecoDistributedDataParallel(DistributedDataParallel):
    """torch's DDP, with no device ids for a module whose parameters are on the CPU."""

    def __init__(self, module, device_ids=None, output_device=None, **kwargs):
        if all(p.device.type == "cpu" for p in module.parameters()):
            device_ids = output_device = None
        super().__init__(module, device_ids=device_ids, output_device=output_device, **kwargs)


def install() -> None:
    """Replace the class in fairseq's ``distributed_fairseq_model`` module; idempotent."""
    from fairseq.models import distributed_fairseq_model

    wrap_once(
        distributed_fairseq_model,
        "DistributedDataParallel",
        lambda _: VecoDistributedDataParallel,
        "cpu_ddp",
    )
