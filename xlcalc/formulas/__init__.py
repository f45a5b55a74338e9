"""Every formula of xlcalc, registered on import. One module per subject.

The composed stage memory model (``MEM_PER_GPU_GB``) registers from :mod:`xlcalc.stage_memory`, which the
package imports after this one (``xlcalc/__init__.py``), so that the formulas import nothing that imports them."""

from . import activations, budget, communication, compute, cost, finetune, goodput, memory, microbatch, ownership, parallel, ranges, roofline, steptime
from .activations import *  # noqa: F401,F403
from .budget import *  # noqa: F401,F403
from .communication import *  # noqa: F401,F403
from .compute import *  # noqa: F401,F403
from .cost import *  # noqa: F401,F403
from .finetune import *  # noqa: F401,F403
from .goodput import *  # noqa: F401,F403
from .memory import *  # noqa: F401,F403
from .microbatch import *  # noqa: F401,F403
from .ownership import *  # noqa: F401,F403
from .parallel import *  # noqa: F401,F403
from .ranges import *  # noqa: F401,F403
from .roofline import *  # noqa: F401,F403
from .steptime import *  # noqa: F401,F403

__all__ = [*activations.__all__, *compute.__all__, *memory.__all__, *parallel.__all__, *roofline.__all__, *cost.__all__, *steptime.__all__, *microbatch.__all__, *communication.__all__, *finetune.__all__,
           *ownership.__all__, *goodput.__all__, *budget.__all__, *ranges.__all__]
