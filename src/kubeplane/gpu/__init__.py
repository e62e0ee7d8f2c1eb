"""GPUs: per-device sharing, GPU-model preferences, fragmentation (FGD) and the openb trace.

Modules: :mod:`.model` (how GPUs appear on nodes and pods), :mod:`.frag` (the FGD paper's fragmentation measure),
:mod:`.policies` (the six policies' scores and device choices, pure functions), :mod:`.plugins` (them as
scheduler plugins), :mod:`.openb` (the trace loader) and :mod:`.repro` (the paper's experiment, replayed fast).
"""
