"""xlcalc: will it fit, how many GPUs, how many days, how much money — for LLM training.

Every formula lives once in :mod:`xlcalc.formulas` and is exposed three ways: as a
Python function (here), as an Excel worksheet function (``udfs/``) and as live
formula text in the planning workbook (``build_workbook.py``).
"""

from .errors import CatalogError, InputError
from .formulas import *  # noqa: F401,F403
from .formulas import __all__ as _formula_names  # type: ignore[attr-defined]
from .registry import REGISTRY, Formula, all_formulas, get_formula

__version__ = "0.1.0"
