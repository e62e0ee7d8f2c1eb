"""Simulated kubelets: a fleet of nodes in one process (registration, heartbeat, admission, pod lifecycle,
eviction, static pods). Containers are simulated; nothing is executed."""
