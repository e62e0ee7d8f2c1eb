"""Simulated DRA drivers and the kubelet DRA manager (upstream ``pkg/kubelet/cm/dra`` and kubelet plugins)."""
