"""The ``kubeplane`` command."""
