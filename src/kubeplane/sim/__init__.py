"""Simulation mode: the real control plane on a virtual clock (docs/sim.md)."""
