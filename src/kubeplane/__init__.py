"""kubeplane: the Kubernetes scheduling control plane, in Python."""

__version__ = "0.1.0"
