"""Kubernetes REST semantics over a :mod:`kubeplane.store`: registry, strategies, watch cache, HTTP (ASGI)."""
