"""The simulation's time-series columns, grouped as the report plots them (``kubeplane.sim.plots``) and as the web
UI's Runs view charts them (``kubeplane.ui.runs``): one definition for both. Plain data with no imports, so the UI,
which may not import the simulation, may import this module (tests/test_layering.py's SHARED_MODULES)."""

PHASE_COLUMNS = ("pods_pending", "pods_running", "pods_succeeded", "pods_failed")
ALLOCATION_COLUMNS = ("cpu_allocation", "memory_allocation")
NODE_COLUMNS = ("nodes_ready", "nodes_total", "nodes_in_use")
COUNTER_COLUMNS = ("scheduling_attempts", "preemptions", "evictions")
ENDED_COLUMNS = ("ended_completed", "evictions", "ended_preempted", "ended_deleted", "ended_rejected")
# Raw amounts behind cpu_allocation / memory_allocation: the fraction plot already shows them.
RAW_COLUMNS = ("cpu_requested_m", "cpu_allocatable_m", "memory_requested_bytes", "memory_allocatable_bytes")
# GPU pods in the scenario (kubeplane.sim.gpu): the FGD paper's measures over time.
GPU_PCT_COLUMNS = ("gpu_alloc_pct", "gpu_frag_pct", "gpu_frag_ratio_pct")
GPU_COUNT_COLUMNS = ("gpu_unallocated",)
# Node groups in the scenario (kubeplane.sim.autoscaling): one column per group, its registered nodes.
NODE_GROUP_PREFIX = "nodes_group_"
