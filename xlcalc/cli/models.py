"""``--config PATH``: a model from a Hugging Face config.json, for the commands that take ``--model``."""

from __future__ import annotations

import argparse

from .. import catalog
from ..errors import InputError
from ..hf_config import model_from_hf_config
from ..recipes import DEFAULT_SEQ_LEN


def add_config_flag(p: argparse.ArgumentParser, seq_len_required: bool = False) -> None:
    """``--config``; every command that defaults the sequence length takes the one default for a config.json model
    (xlcalc.recipes.DEFAULT_SEQ_LEN); ``seq_len_required``: the command has no default (calibrate)."""
    give = "give --seq-len" if seq_len_required else f"give --seq-len, else {DEFAULT_SEQ_LEN}"
    p.add_argument("--config", metavar="PATH",
                   help="a Hugging Face config.json: the model's architecture, instead of --model (its "
                        f"max_position_embeddings is the context window, not the training sequence length: {give})")


def config_model(args: argparse.Namespace) -> catalog.Model | None:
    """The model of ``--config``, or None when it is not given (``--model`` and ``--config`` exclude each other)."""
    if getattr(args, "config", None) is None:
        return None
    if getattr(args, "model", None):
        raise InputError("config", args.config, "given without --model (one model at a time)")
    return model_from_hf_config(args.config)
