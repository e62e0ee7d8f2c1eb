"""CustomResourceDefinitions as pure functions: the CRD object's own validation and defaulting, structural
schemas (validation of custom resources with kube-openapi's messages, pruning, defaulting), the resources a CRD
serves, its printer columns and its OpenAPI document. No I/O: the API server (``apiserver/crds.py``) serves them.
"""
