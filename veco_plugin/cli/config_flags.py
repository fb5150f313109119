"""Command-line flags generated from a dataclass config, so that the two cannot drift.

A config field ``max_words: int = field(default=50, metadata={"help": ...})`` becomes
``--max-words`` (``type=int``, ``default=50``, that help) through fairseq's own
:func:`~fairseq.dataclass.utils.gen_parser_from_dataclass`: a field without a default is
a required flag, a ``bool`` one a switch (``store_true`` when it defaults to False),
``Optional[X]`` reads an ``X``, ``metadata={"choices": [...]}`` limits the flag to those
values (through fairseq's :func:`~fairseq.dataclass.ChoiceEnum`; the field keeps its own
type). A field holding a dataclass (a nested config, ``clean: CleanConfig``) becomes that
config's flags, in its place and unprefixed (``--min-len``, not ``--clean-min-len``).

The configs stay plain (frozen, positional) dataclasses: fairseq's function reads a
:class:`~fairseq.dataclass.FairseqDataclass`, so it is given one made from the config's
fields.
"""

import argparse
import dataclasses
import typing
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Iterable,
    List,
    Mapping,
    Optional,
    Tuple,
    Type,
    TypeVar,
)

from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.dataclass.utils import gen_parser_from_dataclass

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

C = TypeVar("C", bound="DataclassInstance")


def _nested(kind: Any) -> bool:
    return isinstance(kind, type) and dataclasses.is_dataclass(kind)


def _flags_class(
    config: "Type[DataclassInstance]",
    names: Optional[List[str]],
    text: bool,
    types: Mapping[str, Callable[[str], Any]],
) -> Type[FairseqDataclass]:
    """The :class:`FairseqDataclass` whose fields are the flags of ``config``'s fields
    ``names`` (default: all), in that order."""
    hints = typing.get_type_hints(config)
    fields = {f.name: f for f in dataclasses.fields(config)}
    unknown = [] if names is None else [n for n in names if n not in fields]
    if unknown:
        raise ValueError(f"{config.__name__} has no field {', '.join(sorted(unknown))}")
    spec: List[Tuple[str, Any, Any]] = []
    for f in [fields[n] for n in names] if names is not None else fields.values():
        kind: Any = hints[f.name]
        default = f.default
        if _nested(kind):
            kind, default = _flags_class(kind, None, text, types), dataclasses.MISSING
        elif f.name in types:
            kind = types[f.name]
        elif "choices" in f.metadata:
            kind = ChoiceEnum(list(f.metadata["choices"]))
        elif text and kind is not bool:
            kind = str
            if default is not dataclasses.MISSING and default is not None:
                default = str(default)
        # init=False: a field without a default is then absent from the instance below,
        # which gen_parser_from_dataclass turns into a required flag.
        spec.append(
            (f.name, kind, dataclasses.field(default=default, init=False, metadata=f.metadata))
        )
    return dataclasses.make_dataclass(f"{config.__name__}Flags", spec, bases=(FairseqDataclass,))


def add_config_flags(
    parser: "argparse._ActionsContainer",
    config: "Type[DataclassInstance]",
    names: Optional[Iterable[str]] = None,
    text: bool = False,
    types: Optional[Mapping[str, Callable[[str], Any]]] = None,
) -> None:
    """Add to ``parser`` (an argument group, a mutually exclusive group) one flag per
    field of the dataclass ``config`` named in ``names``, in that order (default: every
    field, in the config's order).

    ``text``: every flag that is not a switch reads its value as text (its default shown
    and stored as text), for a caller whose own checks convert it with their own
    messages. ``types``: the function that reads a field's flag, by field name (a check
    with its own argparse message, e.g. a count of 1 or more)."""
    names = None if names is None else list(names)
    flags = _flags_class(config, names, text, dict(types or {}))
    gen_parser_from_dataclass(parser, flags())


def config_from_flags(config: Type[C], args: argparse.Namespace, **values: Any) -> C:
    """The ``config`` holding the values of the flags :func:`add_config_flags` made from
    its fields (a nested config's from its own); ``values``: fields set otherwise (a
    hand-written flag's meaning, a value the caller converted)."""
    hints = typing.get_type_hints(config)
    for f in dataclasses.fields(config):
        if f.name not in values:
            kind = hints[f.name]
            values[f.name] = (
                config_from_flags(kind, args) if _nested(kind) else getattr(args, f.name)
            )
    return config(**values)
