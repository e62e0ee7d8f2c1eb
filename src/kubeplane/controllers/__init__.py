"""kube-controller-manager's controllers (upstream ``pkg/controller/...``), one module each, and the manager."""
