"""Suite-wide settings.

``KUBEPLANE_STRICT_VECTORS=1``: a disagreement between a scheduler plugin's vector path and its reference
implementation raises instead of being logged (kubeplane.scheduler.schedule_one), in this process and in every
kubeplane process a test starts (they inherit the environment), so no test passes on a silently trusted path.
"""

from __future__ import annotations

import os

from kubeplane.scheduler.schedule_one import STRICT_VECTORS_ENV

os.environ[STRICT_VECTORS_ENV] = "1"
