"""scheduler/plugins."""
