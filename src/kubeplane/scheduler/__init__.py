"""kubeplane's reimplementation of kube-scheduler (see docs/scheduler.md)."""
