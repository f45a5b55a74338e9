"""Leave-one-source-out validation of the step-time model on published measured training runs.

The runs are ``xlcalc/data/reference/throughput_runs.json`` (described in ``throughput_runs.md`` beside it).
The pipeline, in the order :func:`validate` runs it:

1. ``runs.py``: :func:`load_runs` reads the records; :func:`to_query` turns a predictable one into a :class:`Query`
   (architecture, GPU, GPU count, the layout the source pins, precision, the measured throughput on one
   basis) or a :class:`Skip` that says why it cannot be predicted. Megatron-Bridge re-measures the same
   recipes release after release: :func:`deduplicate` keeps the newest release of each recipe.
2. ``adapter.py``: :func:`predict` is the ONE adapter between a query and the planner's step-time model: it predicts the
   run's tokens/s per GPU at each matmul efficiency of :data:`GRID` (the model's free constant).
   Features the model in this version cannot express (FP8, context parallelism, expert parallelism,
   uneven pipeline stages) are detected from the planner's API by :func:`capabilities`; a run that needs
   one is skipped with that reason until the planner gains it.
3. ``scoring.py``: :func:`loso` calibrates leave-one-source-out: for every source, the free constants are fitted on the
   other sources only, and that source's runs are predicted; the constant-MFU baselines are computed on
   exactly the runs scored.
4. ``facts.py`` / ``factchoice.py``: the discrete facts set while the scored runs' errors were in view are chosen
   inside the loop like fitted constants (:func:`loso_chosen`): the headline. ``pipeline.py``: :func:`validate`
   runs 1-4 and scores every fact as stated, each left out alone and all left out beside it.
5. ``report.py``: :func:`render` writes ``docs/validation.md``.

One basis for every measurement: model FLOPs per token as the planner counts them (6N of the matmuls, the
attention core and the output layer; ``xlcalc.formulas.steptime.model_flops_per_token``) at the dense BF16
peak of the catalog GPU, so an MFU error is a tokens/s error. Each run says where its tokens/s came from
(:attr:`Query.basis`).

Free constants (few, physically meaningful, never one per run): the share of peak the matmuls reach in a
training step, one value per software-stack profile (:data:`PROFILES`). A held-out source whose profile
no other source shares gets the value fitted to all other sources pooled.
"""

from .adapter import FACTOR_GRID, GRID, GRID_STEP, REFERENCE_EFFICIENCY, Curve, capabilities, predict, unsupported  # noqa: F401
from .report import defaults_sentence, headline_sentence, missing_features, render  # noqa: F401
from .runs import (GPU_STAND_IN, PROFILES, PROFILE_TEXT, RUNS_JSON, SCORED_APART, Query, Skip,  # noqa: F401
                   deduplicate, load_runs, release, to_query)
from .scoring import (TOLERANCE, Scored, best_constant, fit_constant_mfu, fit_efficiency, headline,  # noqa: F401
                      log_error_at, loso, source_weights, summary)
from .pipeline import validate  # noqa: F401
from .. import catalog  # noqa: F401
