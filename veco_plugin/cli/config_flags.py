"""Command-line flags generated from a dataclass config, so that the two cannot drift.

A config field ``max_words: int = field(default=50, metadata={"help": ...})`` becomes
``--max-words`` (``type=int``, ``default=50``, that help) through fairseq's own
:func:`~fairseq.dataclass.utils.gen_parser_from_dataclass`: a field without a default is
a required flag, a ``bool`` one a switch (``store_true`` when it defaults to False),
``Optional[X]`` reads an ``X``. The configs stay plain (frozen, positional) dataclasses:
fairseq's function reads a :class:`~fairseq.dataclass.FairseqDataclass`, so it is given
one made from the config's fields.
"""

import argparse
import dataclasses
import typing
from typing import TYPE_CHECKING, Any, Iterable, Optional, Type, TypeVar

from fairseq.dataclass import FairseqDataclass
from fairseq.dataclass.utils import gen_parser_from_dataclass

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

C = TypeVar("C", bound="DataclassInstance")


def add_config_flags(
    parser: "argparse._ActionsContainer",
    config: "Type[DataclassInstance]",
    names: Optional[Iterable[str]] = None,
    text: bool = False,
) -> None:
    """Add to ``parser`` (or an argument group) one flag per field of the dataclass
    ``config`` named in ``names`` (default: every field), in the config's field order.

    ``text``: every flag that is not a switch reads its value as text (its default shown
    and stored as text), for a caller whose own checks convert it with their own
    messages."""
    hints = typing.get_type_hints(config)
    wanted = None if names is None else set(names)
    spec = []
    for f in dataclasses.fields(config):
        if wanted is not None and f.name not in wanted:
            continue
        kind: Any = hints[f.name]
        default = f.default
        if text and kind is not bool:
            kind = str
            if default is not dataclasses.MISSING and default is not None:
                default = str(default)
        # init=False: a field without a default is then absent from the instance below,
        # which gen_parser_from_dataclass turns into a required flag.
        spec.append(
            (f.name, kind, dataclasses.field(default=default, init=False, metadata=f.metadata))
        )
    if wanted is not None and len(spec) != len(wanted):
        unknown = wanted - {name for name, _, _ in spec}
        raise ValueError(f"{config.__name__} has no field {', '.join(sorted(unknown))}")
    flags = dataclasses.make_dataclass(f"{config.__name__}Flags", spec, bases=(FairseqDataclass,))
    gen_parser_from_dataclass(parser, flags())


def config_from_flags(config: Type[C], args: argparse.Namespace) -> C:
    """The ``config`` holding the values of the flags :func:`add_config_flags` made from
    its fields."""
    return config(**{f.name: getattr(args, f.name) for f in dataclasses.fields(config)})
