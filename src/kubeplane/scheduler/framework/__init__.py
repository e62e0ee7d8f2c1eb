"""scheduler/framework."""
