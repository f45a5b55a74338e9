"""xlcalc: will it fit, how many GPUs, how many days, how much money — for LLM training.

Every formula lives once in :mod:`xlcalc.formulas` and is exposed three ways: as a
Python function (here), as an Excel worksheet function (``udfs/``) and as live
formula text in the planning workbook (``build_workbook.py``).
"""

from .errors import CatalogError, InputError
from .formulas import *  # noqa: F401,F403
from .formulas import __all__ as _formula_names  # type: ignore[attr-defined]
from .registry import REGISTRY, Formula, all_formulas, get_formula

# the composed stage memory model (MEM_PER_GPU_GB) registers here, after the formulas it composes
from . import stage_memory as _stage_memory  # noqa: E402,F401

__version__ = "0.1.0"
