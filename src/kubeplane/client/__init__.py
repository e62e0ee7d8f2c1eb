"""One client for every component: the Client protocol with HTTP and in-process transports, informers, the work
queue, the event recorder and leader election. Components see the cluster only through this package."""
