"""The descheduler's plugins, one module per plugin or per small family (upstream
``pkg/framework/plugins/*``); :mod:`kubeplane.descheduler.registry` names them."""
