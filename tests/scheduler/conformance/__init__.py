"""Upstream kube-scheduler plugin test tables, translated (README.md, FORMAT.md), and their runner run.py."""
