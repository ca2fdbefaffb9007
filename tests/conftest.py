import sys
from pathlib import Path

from hypothesis import settings

sys.path.insert(0, str(Path(__file__).parent))

# Property tests must not flake on a loaded CI machine: no per-example deadline, and a fixed
# example sequence (the same inputs on every run).
settings.register_profile("pyvolcano", deadline=None, derandomize=True)
settings.load_profile("pyvolcano")
