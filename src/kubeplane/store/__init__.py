"""An MVCC key-value store with etcd's semantics and watch; it knows nothing of Kubernetes."""
