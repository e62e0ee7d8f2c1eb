"""Authentication and authorization of API requests (kube-apiserver v1.37's filters and authorizers).

One module per concept: :mod:`.authorizer` (request attributes, decisions, the union of authorizers and the
Forbidden answer), :mod:`.rbac` (the RBAC authorizer and rule resolution), :mod:`.bootstrap` (upstream's
bootstrap roles and bindings), :mod:`.node` (the Node authorizer and its graph), :mod:`.noderestriction`
(NodeRestriction admission), :mod:`.impersonation` (``Impersonate-*`` headers), :mod:`.reviews` (the
authorization.k8s.io reviews).
"""
