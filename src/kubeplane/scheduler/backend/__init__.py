"""scheduler/backend."""
