"""The serverlab HTTP contract for Python stacks, written once.

Standard library only; Python 3.9+ (CPython and PyPy). Every Python stack
uses it: frameworks route with their own tools and call the parsing,
workday and body functions; servers without a framework use ``Router``.
"""

from . import config, params, responses, workday
from .config import *  # noqa: F403  (each module's __all__ lists its public names)
from .params import *  # noqa: F403
from .responses import *  # noqa: F403
from .workday import *  # noqa: F403

__version__ = "1.0.0"

__all__ = [*config.__all__, *params.__all__, *responses.__all__, *workday.__all__]
