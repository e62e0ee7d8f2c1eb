"""cluster-autoscaler, reimplemented on kubeplane's scheduler (issue 30; docs/autoscaler.md).

Layout (one concept per module; kubernetes/autoscaler's cluster-autoscaler/core is the model):

* :mod:`.provider`: the node groups (:class:`~.provider.NodeGroupSpec`) and the :class:`~.provider.CloudProvider`
  protocol the core drives; :mod:`.nodegroups` parses node groups from YAML; the simulated cloud
  (:class:`~.fleet_provider.FleetProvider`, nodes run by a kubelet :class:`~kubeplane.kubelet.fleet.Fleet`) lives
  in :mod:`.fleet_provider`.
* the core (options named after cluster-autoscaler's flags, the scheduler-simulation predicate checker, scale-up
  with its estimator and expanders, scale-down with its eligibility and drain rules, the status ConfigMap and
  events, the loop) talks to the API as every other component does (list-watch, the Eviction API) and to the cloud
  only through :class:`~.provider.CloudProvider`.
"""
