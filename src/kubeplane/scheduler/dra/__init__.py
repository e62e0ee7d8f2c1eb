"""The structured-parameters allocator of kube-scheduler's DynamicResources plugin (upstream
``staging/src/k8s.io/dynamic-resource-allocation/structured``, v1.37), one concept per module:

* :mod:`.features` -- which allocator features are on (v1.37 defaults select upstream's "incubating" variant);
* :mod:`.pools` -- gathering the ResourceSlices of a node into pools (incomplete / invalid pools);
* :mod:`.allocated` -- devices and capacity already in use (allocated claims plus in-flight allocations);
* :mod:`.selectors` -- DeviceClass and request CEL selectors through :mod:`kubeplane.api.dra.cel`;
* :mod:`.constraints` -- matchAttribute / distinctAttribute;
* :mod:`.capacity` -- consumable capacity (requestPolicy rounding, shared devices);
* :mod:`.allocator` -- the backtracking search and the AllocationResult it builds (:mod:`.result`).

Objects are plain API dicts (resource.k8s.io/v1 JSON); results are AllocationResult dicts.
"""
