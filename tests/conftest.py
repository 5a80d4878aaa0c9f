"""Make ``enzyme_py`` importable from the source tree when it is not installed."""

import pathlib
import sys

try:
    import enzyme_py  # noqa: F401
except ImportError:
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "plugin"))

# Hypothesis: the generated-program tests compile C, so a shrink can take many
# minutes.  Under CI (CI=true) run a fixed set of examples without shrinking,
# so a red run is reproducible and bounded in time; locally, explore freely.
import os  # noqa: E402

from hypothesis import Phase, settings  # noqa: E402

settings.register_profile("ci", derandomize=True, print_blob=True,
                          phases=[Phase.explicit, Phase.reuse, Phase.generate])
if os.environ.get("CI"):
    settings.load_profile("ci")
