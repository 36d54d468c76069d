"""`make bench-api`'s server settings: the production settings, with the bare view's urlconf."""

from omniroute.settings import *  # noqa: F403

ROOT_URLCONF = "benchmarks.bareview"
