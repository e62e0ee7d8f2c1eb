"""The simulated CSI driver: external-provisioner (with its capacity controller) and the node plugin's
registration, run by the kubelet fleet (:class:`.driver.CSIPlugins`; configuration in :mod:`.config`)."""
