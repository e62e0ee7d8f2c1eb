"""The descheduler, reimplemented (issue 30; docs/descheduler.md): kubernetes-sigs/descheduler's
DeschedulerPolicy v1alpha2 profiles and plugins, the DefaultEvictor, evictions through the Eviction API, on an
interval of the injected clock, with its dry-run mode."""
