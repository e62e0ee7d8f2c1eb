"""resource.k8s.io (Dynamic Resource Allocation): the CEL device selectors (:mod:`.cel`), shared by admission
(selectors compiled when a DeviceClass, ResourceClaim or ResourceClaimTemplate is written) and the scheduler's
structured allocator (selectors evaluated against each candidate device)."""
