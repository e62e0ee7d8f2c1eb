"""Pure helpers shared by every component: quantities, selectors, metadata, pod and node semantics.

Nothing in this package performs I/O or imports another kubeplane package.
"""
