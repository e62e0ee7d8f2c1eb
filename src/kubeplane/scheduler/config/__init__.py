"""scheduler/config."""
