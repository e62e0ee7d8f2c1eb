"""A hypothesis-driven fuzz harness for ``kubeplane apiserver`` (issue 22).

:mod:`.seeds` has one valid object per served kind, :mod:`.generate` draws abstract request plans from them
(verbs, subresources, mutations, query parameters, media types), :mod:`.mutate` turns a plan into one concrete
HTTP request against the server's current state, :mod:`.typed` checks a stored object as the official client's
typed models read it, and :mod:`.harness` runs plans against a real server and checks the invariants after each.
"""
