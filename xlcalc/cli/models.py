"""``--config PATH``: a model from a Hugging Face config.json, for the commands that take ``--model``."""

from __future__ import annotations

import argparse

from .. import catalog
from ..errors import InputError
from ..hf_config import model_from_hf_config


def add_config_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", metavar="PATH",
                   help="a Hugging Face config.json: the model's architecture, instead of --model "
                        "(the sequence length is not in it: give --seq-len)")


def config_model(args: argparse.Namespace) -> catalog.Model | None:
    """The model of ``--config``, or None when it is not given (``--model`` and ``--config`` exclude each other)."""
    if getattr(args, "config", None) is None:
        return None
    if getattr(args, "model", None):
        raise InputError("config", args.config, "given without --model (one model at a time)")
    return model_from_hf_config(args.config)
