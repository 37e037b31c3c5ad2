"""``dg.deep_gemm.utils``: DeepGEMM's ``deep_gemm.utils`` (quantisation, layouts, dist helpers)."""

from . import dist, layout, math  # noqa: F401
from .dist import init_dist, uneven_all_gather  # noqa: F401
from .layout import *  # noqa: F401,F403
from .math import *  # noqa: F401,F403
