"""Test-wide settings: runtime checks on, hypothesis without deadlines (CI is noisy)."""

import os

from hypothesis import settings

settings.register_profile("tracer", deadline=None, print_blob=True,
                          max_examples=int(os.environ.get("TRACER_HYPOTHESIS_EXAMPLES", "40")))
settings.load_profile("tracer")

os.environ.setdefault("TRACER_RUNTIME_CHECKS", "1")
